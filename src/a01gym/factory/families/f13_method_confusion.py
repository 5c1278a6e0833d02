"""F13: a multi-verb route whose guard checks only one of its verbs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a01gym.factory import testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import admin_settings, member_settings
from a01gym.scenario.httptest import HttpTest

if TYPE_CHECKING:
    from a01gym.factory.sites import Attack

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    tests = [admin_settings(cast, method, days) for method, days in (("PUT", 30), ("PATCH", 60))]
    tests.append(member_settings(cast))
    return tests


def _extra_exploits(a: Attack) -> list[HttpTest]:
    """The unguarded verb from the other tenant too, on that tenant's own settings: a fix
    that guards the verb for one tenant's members, or one account, misses it."""
    if a.site != "settings.update" or a.attacker != a.cast.peer:
        return []
    outsider = a.cast.outsider
    return [
        testkit.write_test(
            f"{a.id}.other_tenant",
            a.kind,
            outsider,
            "PATCH",
            "/tenant/settings",
            "SELECT retention_days, webhook_url FROM tenant_settings WHERE tenant_id = ?",
            [testkit.id_of("tenant_b")],
            body={"retention_days": 2, "webhook_url": "https://evil.example/other"},
            headers=testkit.spoof(outsider),
            description=f"{outsider} changes the tenant_b settings with PATCH",
        )
    ]


FAMILY = Family(
    id="F13",
    title="HTTP method confusion (guard checks one verb of a multi-verb route)",
    cwes=("CWE-650", "CWE-285", "CWE-862"),
    sites=("settings.update",),
    traps=(
        vocabulary.DENY_ALL,
        vocabulary.DELETE_ROUTE,
        vocabulary.CLIENT_TRUST,
        vocabulary.HARDCODE,
    ),
    regressions=_regressions,
    extra_exploits=_extra_exploits,
)
