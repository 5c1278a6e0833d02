"""F07: list and search queries that leak across tenants."""

from __future__ import annotations

from a01gym.factory import testkit
from a01gym.factory.families.base import OWASP_A01, Family
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v, p, o, adm = cast.victim, cast.peer, cast.outsider, cast.admin
    vp, vt, op = f"{v}_private", cast.team_row(v), f"{o}_private"
    search = f"{cast.url}/search"
    q = {"q": cast.term}
    tests = [
        testkit.read_test(
            "regression.list_outsider",
            R,
            o,
            cast.url,
            op,
            description="each tenant lists its own records",
        ),
        testkit.read_test(
            "regression.admin_list",
            R,
            adm,
            cast.url,
            op,
            description="an administrator lists every record",
        ),
        testkit.read_test(
            "regression.owner_filter",
            R,
            v,
            cast.url,
            vp,
            query={"owner_id": testkit.id_of(v)},
            description="filtering by owner keeps the owner's records",
        ),
        testkit.read_test(
            "regression.search_own",
            R,
            v,
            search,
            vp,
            query=q,
            description="search finds the caller's records",
        ),
        testkit.read_test(
            "regression.admin_search",
            R,
            adm,
            search,
            op,
            query=q,
            description="an administrator searches everything",
        ),
    ]
    if cast.shared:
        tests.append(
            testkit.read_test(
                "regression.list_shared",
                R,
                p,
                cast.url,
                vt,
                description="a teammate lists shared records",
            )
        )
        tests.append(
            testkit.read_test(
                "regression.search_shared",
                R,
                p,
                search,
                vt,
                query=q,
                description="search finds shared records",
            )
        )
    return tests


FAMILY = Family(
    "F07",
    "Tenant-isolation leak in list/search queries",
    "CWE-668",
    ("CWE-668", "CWE-200", "CWE-566"),
    OWASP_A01,
    ("record.list", "record.search"),
    ("deny_all", "over_filter", "client_trust", "delete_route"),
    regressions=_regressions,
)
