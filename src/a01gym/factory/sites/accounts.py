"""The account and administration sites: the admin routes, the caller's profile, the team
listing, file downloads, tenant settings, the debug route and acting as another user.

An escalation passes when the attacker's role changed *and* a privileged follow-up call
succeeds (a guard also proves it by the changed role alone, for apps whose bug opens that
follow-up); a leak when the response carries a canary the attacker may not read.
"""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.sites.attack import Attack, Site
from a01gym.scenario.httptest import (
    BodyContains,
    DbCheck,
    HttpTest,
    Step,
    TestKind,
)

__all__ = ["SITES"]


def _admin_users(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            "/admin/users",
            f"{a.victim}_key",
            headers=a.forged,
            description=f"{a.attacker} lists every account's private fields",
        )
    ]


def _admin_audit(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            "/admin/audit",
            "audit",
            headers=a.forged,
            description=f"{a.attacker} reads the audit log",
        )
    ]


def _admin_disable(a: Attack) -> list[HttpTest]:
    return [
        testkit.write_test(
            a.id,
            a.kind,
            a.attacker,
            "POST",
            f"/admin/users/{testkit.id_of(a.victim)}/disable",
            "SELECT is_active FROM users WHERE id = ?",
            [testkit.id_of(a.victim)],
            headers=a.forged,
            description=f"{a.attacker} disables {a.victim}'s account",
        )
    ]


def _impersonate(a: Attack) -> list[HttpTest]:
    act = {"X-Act-As": testkit.header_id(a.victim), **testkit.SPOOF}
    return [
        testkit.read_test(
            f"{a.id}.me",
            a.kind,
            a.attacker,
            "/users/me",
            f"{a.victim}_key",
            headers=act,
            description=f"{a.attacker} acts as {a.victim} and reads their account",
        ),
        testkit.read_test(
            f"{a.id}.record",
            a.kind,
            a.attacker,
            f"{a.cast.url}/{testkit.id_of(a.row)}",
            a.row,
            headers=act,
            description=f"{a.attacker} acts as {a.victim} and reads their record",
        ),
        testkit.read_test(
            f"{a.id}.admin",
            a.kind,
            a.attacker,
            "/admin/audit",
            "audit",
            headers={"X-Act-As": testkit.header_id(a.cast.admin), **testkit.SPOOF},
            description=f"{a.attacker} acts as the administrator",
        ),
    ]


def _profile_update(a: Attack) -> list[HttpTest]:
    patch = Step(
        actor=a.attacker,
        method="PATCH",
        path="/users/me",
        json={"display_name": "Renamed", "role": "admin"},
    )
    changed = DbCheck(
        sql="SELECT role FROM users WHERE id = ?",
        params=[testkit.id_of(a.attacker)],
        expect="changed",
    )
    tests = [
        HttpTest(
            id=a.id,
            kind=a.kind,
            description=f"{a.attacker} makes themselves administrator via their profile",
            steps=[
                patch,
                Step(
                    actor=a.attacker,
                    path="/admin/audit",
                    expect=[BodyContains(value=testkit.canary("audit"))],
                ),
            ],
            db_checks=[changed],
        )
    ]
    if a.kind is TestKind.GUARD:
        # Where the bug itself opens the audit log (F04, F05, F20), the guard above shares an
        # exploit's request and is left out (:mod:`a01gym.factory.guards`): the role the
        # database holds is then the proof, and the profile stays guarded (33 of seed 28's
        # 300 drafts had no guard there).
        tests.append(
            HttpTest(
                id=f"{a.id}.role",
                kind=a.kind,
                description=f"{a.attacker} changes their own role via their profile",
                steps=[patch],
                db_checks=[changed],
            )
        )
    return tests


def _profile_view(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            f"/users/{testkit.id_of(a.victim)}",
            f"{a.victim}_key",
            description=f"{a.attacker} sees {a.victim}'s private account fields",
        )
    ]


def _profile_read(a: Attack) -> list[HttpTest]:
    """A public profile is for signed-in users only: the one way to break ``profile.read``
    (the same route's private fields are ``profile.view``'s). The administrator's profile,
    which no exploit reads: a guard never repeats an exploit's request."""
    admin = a.cast.admin
    return [
        testkit.profile_test(
            f"{a.tag}.{a.site}.anon",
            a.kind,
            "anonymous",
            admin,
            description=f"anonymous reads {admin}'s public profile",
        )
    ]


def _team_list(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            "/team",
            f"{a.victim}_key",
            description=f"{a.attacker}'s team listing exposes private fields",
        )
    ]


def _download(a: Attack) -> list[HttpTest]:
    traversal = f"../{testkit.id_of(a.victim)}/{testkit.cast_file(a.cast, a.victim)}"
    return [
        testkit.read_test(
            f"{a.id}.peer",
            a.kind,
            a.attacker,
            "/files/download",
            f"{a.victim}_file",
            query={"name": traversal},
            description=f"{a.attacker} downloads {a.victim}'s file by path traversal",
        ),
        testkit.read_test(
            f"{a.id}.config",
            a.kind,
            a.attacker,
            "/files/download",
            "service_key",
            query={"name": "../../config/service.env"},
            description=f"{a.attacker} downloads the worker settings by path traversal",
        ),
    ]


def _settings_update(a: Attack) -> list[HttpTest]:
    tenant = "tenant_b" if a.attacker in (a.cast.outsider, a.cast.outsider2) else "tenant_a"
    return [
        testkit.write_test(
            a.id,
            a.kind,
            a.attacker,
            "PATCH",
            "/tenant/settings",
            "SELECT retention_days, webhook_url FROM tenant_settings WHERE tenant_id = ?",
            [testkit.id_of(tenant)],
            body={"retention_days": 1, "webhook_url": "https://evil.example/hook"},
            headers=a.forged,
            description=f"{a.attacker} changes the {tenant} settings with PATCH",
        )
    ]


def _debug_config(a: Attack) -> list[HttpTest]:
    return [
        testkit.read_test(
            f"{a.id}.anon",
            a.kind,
            "anonymous",
            "/debug/config",
            "service_key",
            description="anonymous reads the service configuration",
        ),
        testkit.read_test(
            a.id,
            a.kind,
            a.attacker,
            "/debug/config",
            "service_key",
            headers=a.forged,
            description=f"{a.attacker} reads the service configuration",
        ),
    ]


SITES = (
    Site(id="admin.users", clause="admin.manage", exploits=_admin_users),
    Site(id="admin.audit", clause="admin.manage", exploits=_admin_audit),
    Site(id="admin.disable", clause="admin.manage", exploits=_admin_disable),
    Site(
        id="profile.update",
        clause="profile.update",
        exploits=_profile_update,
        same_tenant_only=True,
    ),
    Site(id="profile.view", clause="fields.private", exploits=_profile_view),
    Site(id="profile.read", clause="profile.read", exploits=_profile_read),
    Site(id="team.list", clause="fields.private", exploits=_team_list, same_tenant_only=True),
    Site(id="files.download", clause="files.read", exploits=_download, same_tenant_only=True),
    Site(
        id="settings.update",
        clause="settings.update",
        exploits=_settings_update,
        same_tenant_only=True,
    ),
    Site(id="debug.config", clause="debug.read", exploits=_debug_config),
    Site(
        id="auth.impersonate",
        clause="profile.impersonate",
        exploits=_impersonate,
        same_tenant_only=True,
        route=False,
    ),
)
"""The account and administration sites, in the order the guard tests visit them."""
