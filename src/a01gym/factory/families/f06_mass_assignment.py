"""F06: input models that let a caller set privileged fields (role, owner, tenant)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import shared, vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R, own_account
from a01gym.scenario.httptest import HttpTest

if TYPE_CHECKING:
    from a01gym.factory.sites import Attack

__all__ = ["FAMILY", "GUARDS", "create_merge", "dump_call", "guard", "model_config"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    sites = set(cast.spec.bug.sites)
    p = cast.peer
    tests = own_account(cast)
    if "profile.update" in sites:
        tests.append(shared.profile_update(cast))
    if "record.create" in sites:
        tests.append(shared.record_create(cast))
    tests.append(
        testkit.write_test(
            "regression.admin_role",
            R,
            cast.admin,
            "PUT",
            f"/admin/users/{testkit.id_of(p)}/role",
            "SELECT role FROM users WHERE id = ?",
            [testkit.id_of(p)],
            body={"role": "support"},
            statuses=[200],
            description="an administrator changes a role",
        )
    )
    return tests


def _extra_exploits(a: Attack) -> list[HttpTest]:
    """Each privileged field set alone: of a new record, its owner and tenant; of the
    caller's own profile, the tenant beside the role (stripping one of them fixes nothing)."""
    c = a.cast
    home = next(f"tenant_{actor.tenant}" for actor in c.spec.actors if actor.name == a.attacker)
    away = "tenant_b" if home == "tenant_a" else "tenant_a"
    if a.site == "profile.update":
        return [
            testkit.write_test(
                f"{a.id}.tenant",
                a.kind,
                a.attacker,
                "PATCH",
                "/users/me",
                "SELECT tenant_id FROM users WHERE id = ?",
                [testkit.id_of(a.attacker)],
                body={"display_name": "Moved", "tenant_id": testkit.id_of(away)},
                description=f"{a.attacker} moves their account into the other tenant",
            )
        ]
    if a.site != "record.create":
        return []
    count = f"SELECT COUNT(*) FROM {c.table} WHERE owner_id = ? AND tenant_id = ?"
    tests = []
    for field, owner, tenant in (("owner", a.victim, home), ("tenant", a.attacker, away)):
        body = {c.title: "planted", c.secret: "planted"}
        body[f"{field}_id"] = testkit.id_of(owner if field == "owner" else tenant)
        tests.append(
            testkit.write_test(
                f"{a.id}.{field}",
                a.kind,
                a.attacker,
                "POST",
                c.url,
                count,
                [testkit.id_of(owner), testkit.id_of(tenant)],
                body=body,
                description=f"{a.attacker} sets the {field} of a new record",
            )
        )
    return tests


_FORBID_EXTRA = vocabulary.Trap(
    name="forbid_extra",
    doc="the input models refuse unknown fields, privileged ones included",
)
_RESPONSE_ONLY = vocabulary.Trap(
    name="response_only",
    doc="privileged fields hidden from the response, still accepted on input",
)
_STRIP_OWNER = vocabulary.Trap(
    name="strip_owner",
    doc="only the owner of a new record overwritten; its tenant and status still the caller's",
)

FAMILY = Family(
    id="F06",
    title="Mass assignment of privileged fields",
    cwes=("CWE-915", "CWE-639", "CWE-269"),
    sites=("profile.update", "record.create"),
    traps=(
        _FORBID_EXTRA,
        _RESPONSE_ONLY,
        vocabulary.ADMIN_BREAK,
        vocabulary.DELETE_ROUTE,
        _STRIP_OWNER,
    ),
    trap_sites={"strip_owner": "record.create", "response_only": "profile.update"},
    regressions=_regressions,
    extra_exploits=_extra_exploits,
    trap_modes={"admin_break": {"admin.role": "deny"}},
)


# -- where privileged fields are dropped (drawn per scenario) -------------------------------
GUARDS = ("model", "ignore", "allowlist")
"""``model``: the input model drops unknown fields (pydantic's default; the bug allows them);
``ignore``: the model says ``extra="ignore"`` explicitly; ``allowlist``: the model keeps extra
fields (``extra="allow"``) and the handler dumps only the model's declared fields."""

_OPEN = ("vuln", "response_only", "strip_owner")
"""Modes whose input model lets extra fields through."""


def guard(spec: Any) -> str:
    """Where ``spec``'s app drops privileged fields (``model`` outside F06)."""
    return checkforms.draw(spec, "mass_assignment", GUARDS) if spec.bug.family == "F06" else "model"


def model_config(spec: Any, mode: str, forbid: bool) -> str:
    """The ``model_config`` line of an input model in ``mode`` ('' for pydantic's default)."""
    drawn = guard(spec)
    if forbid:
        extra = "forbid"
    elif drawn == "allowlist" or mode in _OPEN:
        extra = "allow"
    elif drawn == "ignore":
        extra = "ignore"
    else:
        return ""
    return f'    model_config = ConfigDict(extra="{extra}")\n\n'


def dump_call(spec: Any, mode: str, model: str, arguments: str = "") -> str:
    """``body.model_dump(...)`` of a handler taking ``models.<model>`` in ``mode``."""
    if guard(spec) == "allowlist" and mode not in _OPEN:
        arguments += (", " if arguments else "") + f"include=set(models.{model}.model_fields)"
    return f"body.model_dump({arguments})"


def create_merge(mode: str) -> str:
    """The row a repository writes from a create body's fields ``data`` in ``mode``.

    ``strip_owner`` is the red-team trap: ``owner_id`` is overwritten, ``tenant_id`` (and the
    record's status) are still the caller's to choose.
    """
    if mode in ("vuln", "response_only"):
        return '{"owner_id": user.id, "tenant_id": user.tenant_id, **data}'
    if mode == "strip_owner":
        return '{"tenant_id": user.tenant_id, **data, "owner_id": user.id}'
    return '{**data, "owner_id": user.id, "tenant_id": user.tenant_id}'
