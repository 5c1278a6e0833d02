# ruff: noqa: E501  (templates of generated code keep the generated line lengths)
"""F20: privilege escalation through team role management.

The app gets ``app/routers/members.py``: ``GET /team/members`` and
``PUT /team/members/{user_id}/role``. Administrators
set any role; a manager sets the role of users in their own tenant, to ``user`` or ``manager``
only. Sites: ``roles.grant`` (the requested role is not checked, so a manager makes themselves
administrator) and ``roles.tenant`` (the target's tenant is not checked). The exploit of the
first site is an escalation: the manager's role changes *and* an administrators-only call then
succeeds; a second one grants ``support``, which the ``all_but_admin`` trap (refuse only
``admin``) lets through, and a third makes another member administrator (not the member the
agent's reproduction names). The second site's exploits change the role of the tenant-a user
and of the administrator the reproduction does not name: two, the most this world has beside
it (below ``exploits.EXPLOIT_FLOOR``). Needs a manager actor, which the family asks the author
for. A role change answers with the member's public fields (the policy shows private ones to the
account holder and administrators only; a manager sees roles, and the policy line says so), and
the manager's regression checks that no API key comes back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family, FamilyApp
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import (
    BodyContains,
    BodyLacks,
    DbCheck,
    HttpTest,
    StatusIn,
    Step,
    TestKind,
)

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer

__all__ = ["FAMILY", "STRUCTURES"]

_GRANT = {
    "secure": "body.role not in config.MANAGER_GRANTS",
    "target_role": 'target["role"] == "admin"',
    "all_but_admin": 'body.role == "admin"',
}
_GRANT_ALLOW = {
    "secure": "role in config.MANAGER_GRANTS",
    "target_role": 'target["role"] != "admin"',
    "all_but_admin": 'role != "admin"',
}
_TENANT = 'target["tenant_id"] != user.tenant_id'
STRUCTURES = ("inline", "predicate", "config_grants")
"""``inline``: a manager's checks in the handler, one ``if`` each; ``predicate``: one
``_manager_may_set`` function states them; ``config_grants``: as inline, but the grant bug
is a ``MANAGER_GRANTS`` setting that lists roles a manager must not grant."""


def _app(r: Renderer) -> FamilyApp:
    grants = '("user", "manager")'
    helper = ""
    if (
        checkforms.draw(r.spec, "roles.grant", STRUCTURES) == "config_grants"
        and r.v.mode("roles.grant") == "vuln"
    ):
        grants = '("user", "manager", "support", "admin")'
    if "roles.grant" in r.v.removed or "roles.tenant" in r.v.removed:
        handler = ""
    else:
        r.route("PUT", "/team/members/{user_id}/role")
        grant_mode, tenant_mode = r.v.mode("roles.grant"), r.v.mode("roles.tenant")
        structure = checkforms.draw(r.spec, "roles.grant", STRUCTURES)
        if structure == "config_grants" and grant_mode == "vuln":
            grant_mode = "secure"  # the check is there; the configured list lets "admin" through
        checks = []
        if structure == "predicate":
            allow = [
                'user.role == "manager"'
                if "admin_break" not in (grant_mode, tenant_mode)
                else "False"
            ]
            if grant_mode != "vuln":
                allow.append(_GRANT_ALLOW.get(grant_mode, _GRANT_ALLOW["secure"]))
            if tenant_mode != "vuln":
                allow.append('target["tenant_id"] == user.tenant_id')
            helper = (
                "def _manager_may_set(user: CurrentUser, target: dict[str, Any], role: str) -> bool:\n"
                '    """Managers set roles in MANAGER_GRANTS, on members of their own tenant."""\n'
                f"    return {' and '.join(allow)}\n"
            )
        else:
            helper = ""
            if grant_mode != "vuln":
                checks.append(
                    f"        if {_GRANT.get(grant_mode, _GRANT['secure'])}:\n"
                    '            raise HTTPException(status.HTTP_403_FORBIDDEN, "managers grant only the roles in MANAGER_GRANTS")'
                )
            if tenant_mode != "vuln":
                checks.append(
                    f"        if {_TENANT}:\n"
                    '            raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")'
                )
        only_admins = "admin_break" in (grant_mode, tenant_mode)
        if helper:
            gate = (
                "if not user.is_admin and not _manager_may_set(user, target, body.role):\n"
                '        raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed to set this role")'
            )
        else:
            gate = (
                "if not user.is_admin:\n"
                f'        if user.role != "manager"{" or True" if only_admins else ""}:\n'
                '            raise HTTPException(status.HTTP_403_FORBIDDEN, "only managers and administrators manage roles")'
                + "".join("\n" + check for check in checks)
            )
        handler = r.t(
            '''
            @router.put("/members/{user_id}/role", response_model=models.UserPublic)
            def set_member_role(
                user_id: int,
                body: models.RoleChange,
                user: CurrentUser = Depends(security.current_user),
                connection: sqlite3.Connection = Depends(db.get_db),
            ) -> dict[str, Any]:
                """Administrators set any role; managers manage their own $tenant_noun's members."""
                users = repository.UserRepository(connection)
                target = users.get(user_id)
                if target is None:
                    raise HTTPException(status.HTTP_404_NOT_FOUND, "user not found")
                $gate
                users.update(user_id, {"role": body.role})
                repository.audit(connection, user, "role", f"user {user_id} -> {body.role}")
                return users.get(user_id) or {}
            ''',
            gate=gate,
        )
    head = r.t(
        '''
        """Team membership: who in a $tenant_noun holds which role."""

        import sqlite3
        from typing import Any

        from fastapi import APIRouter, Depends, HTTPException, status

        from app import config, db, models, repository, security
        from app.security import CurrentUser

        router = APIRouter(prefix="/team", tags=["team"])
        '''
    )
    r.route("GET", "/team/members")
    listing = r.t(
        '''
        @router.get("/members", response_model=list[models.UserPublic])
        def list_members(
            user: CurrentUser = Depends(security.current_user),
            connection: sqlite3.Connection = Depends(db.get_db),
        ) -> list[dict[str, Any]]:
            """The members of the caller's $tenant_noun, with their roles for managers."""
            members = repository.UserRepository(connection).in_tenant(user.tenant_id)
            if user.role in ("manager", "admin"):
                return [{**member, "display_name": f"{member['display_name']} ({member['role']})"} for member in members]
            return members
        '''
    )
    text = "\n\n\n".join([head, listing, *([helper, handler] if handler else [])]) + "\n"
    if "config." not in handler + helper:
        text = text.replace("from app import config, db,", "from app import db,")
    return FamilyApp(
        files={"app/routers/members.py": text},
        routers=["members"],
        config=f"MANAGER_GRANTS = {grants}",
    )


def _set_role(actor: str, target: str, role: str) -> Step:
    return Step(
        actor=actor,
        method="PUT",
        path=f"/team/members/{testkit.id_of(target)}/role",
        json={"role": role},
    )


def _role_check(target: str) -> DbCheck:
    return DbCheck(
        sql="SELECT role FROM users WHERE id = ?", params=[testkit.id_of(target)], expect="changed"
    )


def _changed(test_id: str, manager: str, target: str, role: str, why: str) -> HttpTest:
    """An exploit: ``manager`` sets ``target``'s role to ``role`` and it changes."""
    return HttpTest(
        id=test_id,
        kind=TestKind.EXPLOIT,
        description=why,
        steps=[_set_role(manager, target, role)],
        db_checks=[_role_check(target)],
    )


def _exploits(
    cast: testkit.Cast, site: str, attacker: str, victim: str, tag: str
) -> list[HttpTest]:
    manager = cast.manager or attacker
    if site == "roles.grant" and tag.startswith("visible"):
        # the agent's reproduction: the manager grants administrator to a teammate
        why = "a manager grants the administrator role to a teammate"
        return [_changed(f"{tag}.{site}", manager, cast.outsider2, "admin", why)]
    if site == "roles.grant":
        return [
            HttpTest(
                id=f"{tag}.{site}",
                kind=TestKind.EXPLOIT,
                description="a manager makes themselves administrator, then reads the audit log",
                steps=[
                    _set_role(manager, manager, "admin"),
                    Step(
                        actor=manager,
                        path="/admin/audit",
                        expect=[BodyContains(value=testkit.canary("audit"))],
                    ),
                ],
                db_checks=[_role_check(manager)],
            ),
            _changed(
                f"{tag}.{site}.support",
                manager,
                cast.outsider,
                "support",
                "a manager grants the support role (not user or manager)",
            ),
            _changed(
                f"{tag}.{site}.teammate",
                manager,
                cast.outsider,
                "admin",
                "a manager makes another member of their tenant administrator",
            ),
        ]
    # the target must be in the other tenant than the manager's (tenant b): the agent's
    # reproduction uses the second tenant-a user, the hidden exploits the first and the
    # administrator, the only other tenant-a accounts (so the floor's pairs add nothing here)
    if tag.startswith("visible"):
        targets = [cast.peer]
    elif victim == cast.victim:
        targets = [victim, cast.admin]
    else:
        return []
    why = "a manager changes the role of {} in another tenant"
    return [
        _changed(f"{tag}.{site}.{target}", manager, target, "manager", why.format(target))
        for target in targets
    ]


def _granted(
    test_id: str, actor: str, target: str, role: str, why: str, *, admin: bool = False
) -> HttpTest:
    """``actor`` sets ``target``'s role; unless ``actor`` is an administrator, the answer
    shows none of the target's private fields (the policy shows them to the account holder
    and administrators only)."""
    expect: list[Any] = [StatusIn(statuses=[200])]
    if not admin:
        expect.append(BodyLacks(value=testkit.canary(f"{target}_key")))
    step = _set_role(actor, target, role)
    return HttpTest(
        id=test_id,
        kind=R,
        description=why,
        steps=[step.model_copy(update={"expect": expect})],
        db_checks=[_role_check(target)],
    )


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    manager = cast.manager or cast.admin
    return [
        _granted(
            "regression.manager_promotes",
            manager,
            cast.outsider2,
            "manager",
            "a manager promotes a member of their team, and sees none of their private fields",
            admin=manager == cast.admin,
        ),
        _granted(
            "regression.admin_grants",
            cast.admin,
            cast.peer,
            "support",
            "an administrator grants any role",
            admin=True,
        ),
    ]


def _policy(spec: Any) -> list[str]:
    return [
        f"Team roles: administrators set any role; a manager sees the roles of the users in "
        f"their own {spec.domain.tenant_noun} and sets them to user or manager."
    ]


_TARGET_ROLE = vocabulary.Trap(
    name="target_role",
    doc="only changes of an administrator's role refused",
)
_ALL_BUT_ADMIN = vocabulary.Trap(
    name="all_but_admin",
    doc="managers may grant every role but admin",
)

FAMILY = Family(
    id="F20",
    title="Privilege escalation through role management",
    cwes=("CWE-269", "CWE-863", "CWE-266"),
    sites=("roles.grant", "roles.tenant"),
    traps=(vocabulary.ADMIN_BREAK, vocabulary.DELETE_ROUTE, _TARGET_ROLE, _ALL_BUT_ADMIN),
    mapping="partly: CWE-269 and CWE-266 map to A04:2021 (Insecure Design); CWE-863 and the "
    "A01:2021 text's elevation of privilege place the family in A01",
    needs_roles=("manager",),
    trap_sites={"target_role": "roles.grant", "all_but_admin": "roles.grant"},
    cross_tenant=False,
    exploits=_exploits,
    app=_app,
    companion=True,
    regressions=_regressions,
    policy=_policy,
    hint_areas={"roles": "team roles"},
)
