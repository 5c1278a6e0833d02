"""What one bug family is: its labels and sites, and the hooks through which it shapes an app.

A family module (``f11_open_redirect.py``, ...) defines one :class:`Family`. The metadata
(CWEs, sites, traps) is all the spec validator needs. The hooks carry everything that is the
family's own, so the shared skeleton never asks which family it renders:

* on the skeleton's shared sites (:mod:`a01gym.factory.sites`): attacks of its own there
  (``extra_exploits``), sites its bug leaves unauthenticated (``unauthenticated``), checks
  whose form its apps draw (``check_forms``), traps that break other sites
  (``trap_modes``) or apply only to some specs (``trap_sites``, ``trap_applies``);
* for sites only its app has: the app code (:class:`FamilyApp`, which may also add to the
  skeleton's ``config``, ``security`` and ``main`` modules), the exploits, the fixture rows
  and the policy words;
* for every family: hidden regression tests of its own;
* for a self-contained family marked ``companion``: its secure app code beside other
  families' bugs, so its files are no giveaway.

The registry in ``families/__init__.py`` imports each module once, so adding a family is one
new module and one registry line.

Nothing here imports the spec or the renderer at run time (the spec validates against this
table); hooks receive them as arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from a01gym.factory.families import vocabulary

if TYPE_CHECKING:
    from a01gym.factory.renderhost import Renderer
    from a01gym.factory.sites import Attack
    from a01gym.factory.spec import PolicyFeatures, ScenarioSpec
    from a01gym.factory.testkit import Cast
    from a01gym.scenario.httptest import HttpTest

__all__ = ["OWASP_A01", "Family", "FamilyApp"]

OWASP_A01 = "A01:2021"


@dataclasses.dataclass
class FamilyApp:
    """The app code a self-contained family adds to the shared skeleton.

    ``files`` are whole modules (``app/routers/signin.py``), ``routers`` the router modules
    the routers package mounts, ``schema`` extra ``CREATE TABLE`` statements, ``config`` extra
    lines of ``app/config.py``, ``security`` extra code at the end of ``app/security.py``,
    ``main_setup`` lines of ``main.py`` (after the app object exists; each calls a module of
    the app, such as ``origins.install(app)``), ``middleware`` HTTP middleware of ``main.py``
    (before the skeleton's own), ``admin_mounts`` further prefixes the admin router is mounted at,
    ``own_account`` route handlers served beside the caller's own account (``app/routers/me.py``,
    whose routes declare their whole path).
    """

    files: dict[str, str] = dataclasses.field(default_factory=dict)
    routers: list[str] = dataclasses.field(default_factory=list)
    schema: str = ""
    config: str = ""
    main_setup: list[str] = dataclasses.field(default_factory=list)
    security: str = ""
    middleware: list[str] = dataclasses.field(default_factory=list)
    admin_mounts: list[str] = dataclasses.field(default_factory=list)
    own_account: list[str] = dataclasses.field(default_factory=list)

    def merged(self, other: FamilyApp) -> FamilyApp:
        """This app code with ``other``'s beside it (a companion's: see ``Family.companion``).

        Raises:
            ValueError: when both define the same file or router.
        """
        clash = sorted(set(self.files) & set(other.files)) + sorted(
            set(self.routers) & set(other.routers)
        )
        if clash:
            raise ValueError(f"two families' app code both define {clash}")
        return FamilyApp(
            files={**self.files, **other.files},
            routers=[*self.routers, *other.routers],
            schema="\n".join(part for part in (self.schema, other.schema) if part),
            config="\n".join(part for part in (self.config, other.config) if part),
            main_setup=[*self.main_setup, *other.main_setup],
            security="\n\n\n".join(part for part in (self.security, other.security) if part),
            middleware=[*self.middleware, *other.middleware],
            admin_mounts=[*self.admin_mounts, *other.admin_mounts],
            own_account=[*self.own_account, *other.own_account],
        )


def _no_tests(cast: Cast) -> list[HttpTest]:
    return []


def _no_attacks(attack: Attack) -> list[HttpTest]:
    return []


def _every_trap(trap: str, sites: list[str], features: PolicyFeatures) -> bool:
    return True


@dataclasses.dataclass(frozen=True, kw_only=True)
class Family:
    """One bug family: labels, injectable sites, meaningful traps and the family's hooks."""

    id: str
    title: str
    cwes: tuple[str, ...]
    """The CWEs the family covers; the first is the scenario's label (:attr:`cwe`)."""
    sites: tuple[str, ...]
    traps: tuple[vocabulary.Trap, ...]
    """The wrong fixes that make sense for the family (a spec draws some of them)."""
    owasp: str = OWASP_A01
    indirections: tuple[str, ...] = ("dependency", "router", "decorator")
    multi_site_traps: tuple[vocabulary.Trap, ...] = (vocabulary.FIX_ONE_SIBLING,)
    """Traps that apply when a spec has more than one site."""
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
    unauthenticated: tuple[str, ...] = ()
    """Shared sites whose vulnerable rendering also drops the authentication dependency (not
    only the check): anonymous callers reach them, and their exploits include one."""
    extra_exploits: Callable[[Attack], list[HttpTest]] = dataclasses.field(
        default=_no_attacks, compare=False, repr=False
    )
    """The family's own attacks on a shared site, after the site's (say, the attacker as
    their own target): the shapes of a fix that closes the site's attacks but not the
    family's weakness."""
    check_forms: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict, compare=False)
    """Shared check -> the forms its apps draw (:mod:`a01gym.factory.checkforms`); in other
    families' apps the check stays inline."""
    trap_applies: Callable[[str, list[str], PolicyFeatures], bool] = dataclasses.field(
        default=_every_trap, compare=False, repr=False
    )
    """``(trap, sites, features)`` -> whether the hidden suite tells the trap from a fix in
    such a spec (beyond ``trap_sites``)."""
    hint_areas: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)
    """Site prefix -> the area of the app a level-3 hint names, for sites only this family's
    app has (``{label}`` and ``{tenant}`` name the entity and the tenant)."""
    trap_modes: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict, compare=False)
    """trap -> the site modes it renders, where it breaks other sites than the family's own
    (otherwise a trap renders the spec's sites in the mode named after it)."""
    app: Callable[[Renderer], FamilyApp] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """Renders the family's own app code from the renderer (its modes and names)."""
    fixture: Callable[[Cast], dict[str, list[dict[str, object]]]] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """Extra fixture rows by table (new tables, or rows appended to existing ones)."""
    policy: Callable[[ScenarioSpec], list[str]] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )
    """Extra policy sentences (from the spec) for TASK.md and the manifest."""
    clause: str = ""
    """The skeleton's policy clause its own sites keep, for a family without words of its own
    (:func:`a01gym.factory.compiler.policy_clauses`' key; otherwise the family's own lines,
    keyed by its id)."""
    companion: bool = False
    """Whether the family's own app code, rendered secure, may stand beside another family's
    bug as a *companion* (``ScenarioSpec.companions``): its routes, fixture rows, policy
    lines, regressions and guards then come with it. Without companions a file only this
    family's app has would be in exactly the apps where it holds the bug, and a diff against
    any other scenario would point at it (:mod:`a01gym.factory.giveaways`). Only families
    whose code adds modules and settings (no middleware, no extra mounts) qualify."""
    every_app: bool = False
    """Whether a companion family is served in every app, beside those drawn
    (``author.draw_companions``): for code other families' apps would otherwise lack in a
    third of them, so that its module is never the one file setting an app apart from the
    nearest (F12's CORS module)."""

    @property
    def cwe(self) -> str:
        """The CWE a scenario of the family is labelled with."""
        return self.cwes[0]

    @property
    def trap_names(self) -> tuple[str, ...]:
        """The names of :attr:`traps` (what a spec lists)."""
        return tuple(t.name for t in self.traps)

    @property
    def every_trap(self) -> tuple[vocabulary.Trap, ...]:
        """Every trap a spec of the family may list: its own and the multi-site ones."""
        return (*self.traps, *self.multi_site_traps)
