"""F07: list and search queries that leak across tenants."""

from __future__ import annotations

from typing import Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY", "LIST_BUGS", "UNSCOPED_LIST", "list_bug"]


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
            "regression.admin_owner_filter",
            R,
            adm,
            cast.url,
            vp,
            query={"owner_id": testkit.id_of(v)},
            description="an administrator filtering by owner sees the owner's records",
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
                "regression.shared_owner_filter",
                R,
                p,
                cast.url,
                vt,
                query={"owner_id": testkit.id_of(v)},
                description="a teammate filtering by owner sees the owner's shared records",
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
    id="F07",
    title="Tenant-isolation leak in list/search queries",
    cwes=("CWE-668", "CWE-200", "CWE-566"),
    sites=("record.list", "record.search"),
    traps=(
        vocabulary.DENY_ALL,
        vocabulary.OVER_FILTER,
        vocabulary.CLIENT_TRUST,
        vocabulary.DELETE_ROUTE,
    ),
    regressions=_regressions,
)


# -- how the vulnerable list query leaks (drawn per scenario) --------------------------------
LIST_BUGS = ("owner_branch", "unscoped")
"""``owner_branch``: the scope is applied, except on the ``owner_id`` filter's branch;
``unscoped``: the query has no scope at all (only the optional owner filter). The fixes
differ: the first moves the owner filter under the scope, the second adds the scope."""

UNSCOPED_LIST = {
    "sqlite3": """
        sql, params = "SELECT * FROM $ents WHERE 1 = 1", []
        if owner_id is not None:
            sql += " AND owner_id = ?"
            params.append(owner_id)
    """,
    "sqlalchemy": """
        query = select($Ent)
        if owner_id is not None:
            query = query.where($Ent.owner_id == owner_id)
    """,
}
"""The ``unscoped`` vulnerable list body per data-access style (``$``-templates)."""


def list_bug(spec: Any) -> str:
    """How ``spec``'s vulnerable list query leaks."""
    return checkforms.draw(spec, "record.list", LIST_BUGS)
