"""F05: an authorization decision taken from a header the client controls."""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R, own_account
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v = cast.victim
    return [
        *own_account(cast),
        testkit.read_test(
            "regression.admin_act_as",
            R,
            cast.admin,
            "/users/me",
            f"{v}_key",
            headers={"X-Act-As": testkit.header_id(v)},
            description="an administrator acts as a user for a support case",
        ),
    ]


FAMILY = Family(
    "F05",
    "Authorization decision based on client-controlled input",
    "CWE-807",
    ("CWE-807", "CWE-639", "CWE-290"),
    OWASP_A01,
    ("auth.impersonate",),
    ("client_trust", "hardcode", "admin_break"),
    regressions=_regressions,
)
