"""What one bug family is: its labels and sites, and the hooks a self-contained family fills.

A family module (``f11_redirect.py``, ...) defines one :class:`Family`. The metadata (CWEs,
sites, traps) is all the spec validator needs. The hooks carry the family's own code: hidden
regression tests every family may add, and, for families whose routes are not part of the
shared app skeleton, the app code (:class:`FamilyApp`), the exploits, the fixture rows and the
policy words. The registry in ``families/__init__.py`` imports each module once, so adding a
family is one new module and one registry line.

Nothing here imports the spec or the renderer at run time (the spec validates against this
table); hooks receive them as arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a01gym.factory.testkit import Cast
    from a01gym.scenario.httptest import HttpTest

__all__ = ["OWASP_A01", "Family", "FamilyApp"]

OWASP_A01 = "A01:2021"


@dataclasses.dataclass
class FamilyApp:
    """The app code a self-contained family adds to the shared skeleton.

    ``files`` are whole modules (``app/routers/signin.py``), ``routers`` the router modules
    ``main.py`` imports and includes, ``schema`` extra ``CREATE TABLE`` statements,
    ``config`` extra lines of ``app/config.py``, ``main_imports`` and ``main_setup`` lines of
    ``main.py`` (before and after the app object exists).
    """

    files: dict[str, str] = dataclasses.field(default_factory=dict)
    routers: list[str] = dataclasses.field(default_factory=list)
    schema: str = ""
    config: str = ""
    main_imports: list[str] = dataclasses.field(default_factory=list)
    main_setup: list[str] = dataclasses.field(default_factory=list)


def _no_tests(cast: Cast) -> list[HttpTest]:
    return []


@dataclasses.dataclass(frozen=True)
class Family:
    """One bug family: labels, injectable sites, meaningful traps and the family's hooks."""

    id: str
    title: str
    cwe: str
    cwes: tuple[str, ...]
    owasp: str
    sites: tuple[str, ...]
    traps: tuple[str, ...]
    indirections: tuple[str, ...] = ("dependency", "router", "decorator")
    multi_site_traps: tuple[str, ...] = ("fix_one_sibling",)
    mapping: str = dataclasses.field(default="", compare=False)
    """Where the A01 fit is loose: the OWASP 2021 categories the CWEs really map to."""
    needs_roles: tuple[str, ...] = ()
    """Actor roles the family's exploits need (the author adds them, the spec insists)."""
    trap_sites: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)
    """trap -> the site it needs among the spec's sites (otherwise it changes nothing)."""
    cross_tenant: bool = True
    """Whether the first site is also attacked from the other tenant."""
    regressions: Callable[[Cast], list[HttpTest]] = dataclasses.field(
        default=_no_tests, compare=False, repr=False
    )
    """Family-specific hidden positive controls (after the shared ones)."""
    exploits: Callable[[Cast, str, str, str, str], list[HttpTest]] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """``(cast, site, attacker, victim, tag)`` -> exploits of a site only this family has."""
    app: Callable[[Any], FamilyApp] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """Renders the family's own app code from the renderer (its modes and names)."""
    fixture: Callable[[Cast], dict[str, list[dict[str, object]]]] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """Extra fixture rows by table (new tables, or rows appended to existing ones)."""
    policy: Callable[[Any], list[str]] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """Extra policy sentences (from the spec) for TASK.md and the manifest."""
