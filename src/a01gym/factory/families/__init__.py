"""The catalog of A01 bug families the mutator can inject (research/a01-catalog.md §2.3).

Each family lives in its own module of this package (``f01_idor.py`` ...) and defines one
:class:`~a01gym.factory.families.base.Family`: its CWE labels, the *sites* of the generated app
where it can live (each site is one route or one shared function the mutator can make
vulnerable independently), the trap patches that make sense for it, and its hooks (its own
regression tests, its attacks and skeleton variations at shared sites; for self-contained
families also its app code, exploits and fixture rows).
The spec validates against this table and the mutator and the test generator dispatch on it,
so adding a family means one new module and one line in the import below (plain imports: the
host imports only code it ships by name, see tests/unit/test_host_exec.py).
Where a family's CWEs map to another OWASP 2021 category than A01, its ``mapping`` says so
(the table below and the bundle's ``owasp_mapping`` label carry it).
"""

from __future__ import annotations

from types import ModuleType

# the registry: one line per family module, collected into _MODULES below
from a01gym.factory.families import (  # noqa: F401
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
    f21_forwarded_trust,
)
from a01gym.factory.families.base import OWASP_A01, Family, FamilyApp
from a01gym.factory.families.vocabulary import Mode, Trap

__all__ = [
    "COMPANIONS",
    "FAMILIES",
    "OWASP_A01",
    "TRAPS",
    "TRAP_KINDS",
    "Family",
    "FamilyApp",
    "Mode",
    "Trap",
    "catalog_table",
    "family",
]

_MODULES = tuple(
    module
    for name, module in sorted(vars().items())
    if isinstance(module, ModuleType) and isinstance(getattr(module, "FAMILY", None), Family)
)
"""The family modules imported above, in id order (the import is the one list to edit)."""

FAMILIES: dict[str, Family] = {module.FAMILY.id: module.FAMILY for module in _MODULES}
COMPANIONS: tuple[str, ...] = tuple(f.id for f in FAMILIES.values() if f.companion)
"""The families whose secure app code may stand beside another family's bug."""
TRAPS: dict[str, Trap] = {t.name: t for f in FAMILIES.values() for t in f.every_trap}
"""Every trap some family uses, by name (a family names its own in ``Family.traps``)."""
TRAP_KINDS: tuple[str, ...] = tuple(sorted(TRAPS))
"""The names of :data:`TRAPS`, sorted."""


def catalog_table() -> str:
    """The Markdown table of the families that ``docs/families.md`` carries."""
    rows = [
        (f.id, f.title, ", ".join(f.cwes), f.mapping or f.owasp, ", ".join(f.sites))
        for f in FAMILIES.values()
    ]
    lines = [
        "| id | family | CWEs (first: the label) | OWASP 2021 fit | sites |",
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
