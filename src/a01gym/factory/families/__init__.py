"""The catalog of A01 bug families the mutator can inject (research/a01-catalog.md §2.3).

Each family lives in its own module of this package (``f01_idor.py`` ...) and defines one
:class:`~a01gym.factory.families.base.Family`: its CWE labels, the *sites* of the generated app
where it can live (each site is one route or one shared function the mutator can make
vulnerable independently), the trap patches that make sense for it, and its hooks (its own
regression tests; for self-contained families also its app code, exploits and fixture rows).
The spec validates against this table and the mutator and the test generator dispatch on it,
so adding a family means one new module and one line in :data:`_MODULES`.
"""

from __future__ import annotations

from typing import Literal

from a01gym.factory.families.base import OWASP_A01, Family, FamilyApp

__all__ = [
    "FAMILIES",
    "OWASP_A01",
    "PLANNED",
    "TRAP_KINDS",
    "Family",
    "FamilyApp",
    "TrapKind",
    "catalog_table",
    "family",
]

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
    "prefix_allow",
    "no_credentials",
    "prefix_regex",
    "alg_from_header",
    "referer_check",
    "require_login",
    "target_role",
]
TRAP_KINDS: tuple[str, ...] = TrapKind.__args__  # type: ignore[attr-defined]

# The registry: one line per family module (imported after the names above exist, because
# the family modules import the test kit, which the spec module imports in turn).
from a01gym.factory.families import (  # noqa: E402
    f01_idor,
    f02_write_siblings,
    f03_missing_auth,
    f04_function_level,
    f05_client_input,
    f06_mass_assignment,
    f07_tenant_lists,
    f08_export_filter,
    f09_response_model,
    f10_path_traversal,
    f11_open_redirect,
    f12_cors_credentials,
    f13_method_confusion,
    f14_path_mismatch,
    f15_jwt_verification,
    f16_share_tokens,
    f17_forced_browsing,
    f18_csrf,
    f19_optional_auth,
    f20_role_escalation,
)

_MODULES = (
    f01_idor,
    f02_write_siblings,
    f03_missing_auth,
    f04_function_level,
    f05_client_input,
    f06_mass_assignment,
    f07_tenant_lists,
    f08_export_filter,
    f09_response_model,
    f10_path_traversal,
    f11_open_redirect,
    f12_cors_credentials,
    f13_method_confusion,
    f14_path_mismatch,
    f15_jwt_verification,
    f16_share_tokens,
    f17_forced_browsing,
    f18_csrf,
    f19_optional_auth,
    f20_role_escalation,
)

FAMILIES: dict[str, Family] = {m.FAMILY.id: m.FAMILY for m in _MODULES}

PLANNED: dict[str, tuple[str, tuple[str, ...]]] = {
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
