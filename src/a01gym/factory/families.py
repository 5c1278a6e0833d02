"""The catalog of A01 bug families the mutator can inject (research/a01-catalog.md §2.3).

A family names its CWE labels, the *sites* of the generated app where it can live (each site
is one route or one shared function the mutator can make vulnerable independently), and the
trap patches that make sense for it. The spec validates against this table and the mutator and
the test generator dispatch on it, so adding a family means adding a row here and teaching
``appgen``/``testgen`` its sites.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = [
    "FAMILIES",
    "OWASP_A01",
    "PLANNED",
    "TRAP_KINDS",
    "Family",
    "TrapKind",
    "catalog_table",
    "family",
]

OWASP_A01 = "A01:2021"

TrapKind = Literal[
    "deny_all",
    "delete_route",
    "fix_one_sibling",
    "status_only",
    "client_trust",
    "hardcode",
    "admin_break",
    "over_filter",
    "auth_only",
    "global_auth",
    "strip_once",
    "no_slash",
    "forbid_extra",
    "response_only",
    "over_block",
]
TRAP_KINDS: tuple[str, ...] = TrapKind.__args__  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class Family:
    """One bug family: labels, injectable sites and meaningful traps."""

    id: str
    title: str
    cwe: str
    cwes: tuple[str, ...]
    owasp: str
    sites: tuple[str, ...]
    traps: tuple[str, ...]
    indirections: tuple[str, ...] = ("dependency", "router", "decorator")
    multi_site_traps: tuple[str, ...] = ("fix_one_sibling",)


_ADMIN_INDIRECTIONS = ("dependency", "router", "decorator")

FAMILIES: dict[str, Family] = {
    f.id: f
    for f in (
        Family(
            "F01",
            "IDOR on a path parameter (read)",
            "CWE-639",
            ("CWE-639", "CWE-566", "CWE-862"),
            OWASP_A01,
            ("record.read", "record.print"),
            ("deny_all", "delete_route", "status_only", "client_trust", "hardcode", "admin_break"),
        ),
        Family(
            "F02",
            "Ownership checked on read but not on write/delete siblings",
            "CWE-639",
            ("CWE-639", "CWE-862", "CWE-285"),
            OWASP_A01,
            ("record.update", "record.delete", "record.archive"),
            ("deny_all", "delete_route", "status_only", "client_trust", "hardcode", "admin_break"),
        ),
        Family(
            "F03",
            "Missing authentication dependency on one route",
            "CWE-862",
            ("CWE-862", "CWE-306"),
            OWASP_A01,
            ("record.print", "record.export"),
            ("deny_all", "delete_route", "auth_only", "global_auth"),
        ),
        Family(
            "F04",
            "Function-level authorization missing (authenticated is not admin)",
            "CWE-285",
            ("CWE-285", "CWE-862", "CWE-863"),
            OWASP_A01,
            ("admin.users", "admin.audit", "admin.disable"),
            ("deny_all", "delete_route", "status_only", "client_trust", "hardcode"),
        ),
        Family(
            "F05",
            "Authorization decision based on client-controlled input",
            "CWE-807",
            ("CWE-807", "CWE-639", "CWE-290"),
            OWASP_A01,
            ("auth.impersonate",),
            ("client_trust", "hardcode", "admin_break"),
        ),
        Family(
            "F06",
            "Mass assignment of privileged fields",
            "CWE-915",
            ("CWE-915", "CWE-639", "CWE-269"),
            OWASP_A01,
            ("profile.update", "record.create"),
            ("forbid_extra", "response_only", "admin_break", "delete_route"),
        ),
        Family(
            "F07",
            "Tenant-isolation leak in list/search queries",
            "CWE-668",
            ("CWE-668", "CWE-200", "CWE-566"),
            OWASP_A01,
            ("record.list", "record.search"),
            ("deny_all", "over_filter", "client_trust", "delete_route"),
        ),
        Family(
            "F08",
            "Missing owner filter on export/report endpoints",
            "CWE-200",
            ("CWE-200", "CWE-359", "CWE-862"),
            OWASP_A01,
            ("record.export", "record.digest"),
            ("deny_all", "over_filter", "delete_route"),
        ),
        Family(
            "F09",
            "Over-broad response model (excessive data exposure)",
            "CWE-200",
            ("CWE-200", "CWE-201", "CWE-359"),
            OWASP_A01,
            ("profile.view", "team.list"),
            ("over_filter", "status_only", "delete_route"),
        ),
        Family(
            "F10",
            "Path traversal in file download",
            "CWE-22",
            ("CWE-22", "CWE-23", "CWE-552"),
            OWASP_A01,
            ("files.download",),
            ("deny_all", "delete_route", "no_slash"),
        ),
        Family(
            "F13",
            "HTTP method confusion (guard checks one verb of a multi-verb route)",
            "CWE-650",
            ("CWE-650", "CWE-285", "CWE-862"),
            OWASP_A01,
            ("settings.update",),
            ("deny_all", "delete_route", "client_trust", "hardcode"),
        ),
        Family(
            "F14",
            "Guard/route path mismatch (legacy alias prefix)",
            "CWE-425",
            ("CWE-425", "CWE-706", "CWE-288"),
            OWASP_A01,
            ("guard.v1", "guard.legacy"),
            ("deny_all", "delete_route", "over_block"),
            indirections=("middleware",),
        ),
        Family(
            "F17",
            "Forced browsing to an unauthenticated debug route",
            "CWE-425",
            ("CWE-425", "CWE-497", "CWE-538"),
            OWASP_A01,
            ("debug.config",),
            ("deny_all", "delete_route", "auth_only"),
        ),
    )
}


PLANNED: dict[str, tuple[str, tuple[str, ...]]] = {
    "F11": ("Open redirect", ("CWE-601",)),
    "F12": ("CORS misconfiguration with credentials", ("CWE-942", "CWE-346")),
    "F15": ("JWT verification skipped or weakened", ("CWE-347", "CWE-345", "CWE-287")),
    "F16": (
        "Predictable or unbound reset, invite or share tokens",
        ("CWE-640", "CWE-330", "CWE-639"),
    ),
    "F18": (
        "State-changing GET, CSRF-able cookie-authenticated endpoints",
        ("CWE-352", "CWE-1275"),
    ),
    "F19": ("Optional-auth dependency misused as required", ("CWE-862", "CWE-287")),
    "F20": (
        "Privilege escalation through role or permission management",
        ("CWE-269", "CWE-266", "CWE-863"),
    ),
}
"""Catalog families the mutator cannot inject yet: id -> (title, CWEs). Listed so the docs
name all 20 ids; a scenario config naming one is refused like any unknown family."""


def catalog_table() -> str:
    """The Markdown table of all 20 family ids that ``docs/families.md`` carries."""
    rows = [
        (f.id, f.title, ", ".join(f.cwes), "yes", ", ".join(f.sites)) for f in FAMILIES.values()
    ]
    rows += [(i, title, ", ".join(cwes), "not yet", "") for i, (title, cwes) in PLANNED.items()]
    lines = [
        "| id | family | CWEs (first: the label) | implemented | sites |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(row)} |" for row in sorted(rows)]
    return "\n".join(lines) + "\n"


def family(family_id: str) -> Family:
    """The family called ``family_id``.

    Raises:
        KeyError: naming the known families.
    """
    try:
        return FAMILIES[family_id]
    except KeyError:
        raise KeyError(f"unknown family {family_id!r}; known: {', '.join(FAMILIES)}") from None
