"""F10: a file download that joins a client-supplied name without a containment check."""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v = cast.victim
    return [
        testkit.read_test(
            "regression.file_own",
            R,
            v,
            "/files/download",
            f"{v}_file",
            query={"name": "report.txt"},
            description="the owner downloads a file",
        ),
        testkit.read_test(
            "regression.file_nested",
            R,
            v,
            "/files/download",
            f"{v}_nested",
            query={"name": "reports/2024/q1.txt"},
            description="the owner downloads a file from a subfolder",
        ),
    ]


FAMILY = Family(
    "F10",
    "Path traversal in file download",
    "CWE-22",
    ("CWE-22", "CWE-23", "CWE-552"),
    OWASP_A01,
    ("files.download",),
    ("deny_all", "delete_route", "no_slash"),
    regressions=_regressions,
)
