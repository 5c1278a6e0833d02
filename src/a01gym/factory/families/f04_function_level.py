"""F04: an administration route that checks login but not the administrator role.

Its exploits of ``admin.disable`` include a user disabling their own account, which the
``self_exempt`` trap (the role check skipped when the target is the caller) lets through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a01gym.factory import testkit
from a01gym.factory.families import shared, vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest

if TYPE_CHECKING:
    from a01gym.factory.sites import Attack

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    sites = set(cast.spec.bug.sites)
    adm = cast.admin
    tests: list[HttpTest] = []
    if "admin.users" in sites:
        tests.append(shared.admin_users(cast))
    if "admin.audit" in sites:
        tests.append(
            testkit.read_test(
                "regression.admin_audit",
                R,
                adm,
                "/admin/audit",
                "audit",
                description="an administrator reads the audit log",
            )
        )
    if "admin.disable" in sites:
        tests.append(
            testkit.write_test(
                "regression.admin_disable",
                R,
                adm,
                "POST",
                f"/admin/users/{testkit.id_of(cast.outsider2)}/disable",
                "SELECT is_active FROM users WHERE id = ?",
                [testkit.id_of(cast.outsider2)],
                statuses=[200],
                description="an administrator disables an account",
            )
        )
    return tests


def _extra_exploits(a: Attack) -> list[HttpTest]:
    """The attacker disables their own account (what ``self_exempt`` lets through)."""
    if a.site != "admin.disable":
        return []
    me = testkit.id_of(a.attacker)
    return [
        testkit.write_test(
            f"{a.id}.self",
            a.kind,
            a.attacker,
            "POST",
            f"/admin/users/{me}/disable",
            "SELECT is_active FROM users WHERE id = ?",
            [me],
            headers={},
            description=f"{a.attacker} disables {a.attacker}'s account",
        )
    ]


_SELF_EXEMPT = vocabulary.Trap(
    name="self_exempt",
    doc="the role check skipped when the target is the caller",
)

FAMILY = Family(
    id="F04",
    title="Function-level authorization missing (authenticated is not admin)",
    cwes=("CWE-285", "CWE-862", "CWE-863"),
    sites=("admin.users", "admin.audit", "admin.disable"),
    traps=(
        vocabulary.DENY_ALL,
        vocabulary.DELETE_ROUTE,
        vocabulary.STATUS_ONLY,
        vocabulary.CLIENT_TRUST,
        vocabulary.HARDCODE,
        _SELF_EXEMPT,
    ),
    trap_sites={"self_exempt": "admin.disable"},
    regressions=_regressions,
    extra_exploits=_extra_exploits,
)
