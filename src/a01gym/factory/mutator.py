"""The A01 mutator: the correct app, the injected bug, and the trap patches.

For a spec it renders the app three ways through :mod:`a01gym.factory.appgen`: every site
``secure`` (the correct app, which is also the reference fix), the family's target sites
``vuln`` (what the agent gets), and one variant per trap the spec lists — plausible wrong fixes
(research/a01-catalog.md §2.2) that the hidden tests must reject. The trap variants are built
from the same site machinery in reverse, so they stay in step with the app.

Every scenario also carries :data:`FIX_PLUS_HOLE`, whatever its family: the reference fix with
the check of one other skeleton site removed (the site drawn from the spec's seed). It must
score exactly 0 (the G6 gate), which only the guard tests (:mod:`a01gym.factory.guards`) see.
"""

from __future__ import annotations

import dataclasses

from a01gym.factory import appgen, families, guards, testkit
from a01gym.factory import sites as site_registry
from a01gym.factory.families import vocabulary
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.fixtures import FixtureValues

__all__ = ["FIX_PLUS_HOLE", "Mutation", "mutate", "trap_variant", "visible_seed"]

FIX_PLUS_HOLE = "fix_plus_hole"


@dataclasses.dataclass(frozen=True)
class Mutation:
    """The three renderings of one spec."""

    fixed: appgen.RenderedApp
    vulnerable: appgen.RenderedApp
    traps: dict[str, appgen.RenderedApp]


def visible_seed(spec: ScenarioSpec) -> int:
    """The seed that renders the agent's world (never used for hidden runs)."""
    return (spec.seed * 2654435761 + 97) % 2**31


def trap_variant(spec: ScenarioSpec, trap: str) -> appgen.Variant:
    """The site modes of one trap patch.

    Raises:
        ValueError: for a trap the family does not support.
    """
    sites = list(spec.bug.sites)
    family = families.family(spec.bug.family)
    vuln = dict.fromkeys(sites, Mode.VULN)
    world = FixtureValues(visible_seed(spec), testkit.build_fixture(spec).tables)
    victim = spec.actor("user", "a", 0).name
    hardcode = {
        "record_id": str(world.value("id", f"{victim}_private")),
        "owner_id": str(world.value("id", victim)),
        "victim_id": str(world.value("id", victim)),
        "admin_username": str(world.value("user", spec.actor("admin").name)),
    }
    if trap == vocabulary.FIX_ONE_SIBLING.name:
        if len(sites) < 2:
            raise ValueError("fix_one_sibling needs at least two sites")
        return appgen.Variant(modes={**vuln, sites[0]: Mode.SECURE})
    if trap == vocabulary.DENY_ALL.name:
        return appgen.Variant(modes=dict.fromkeys(sites, Mode.DENY))
    if trap == vocabulary.DELETE_ROUTE.name:
        shared = [site_registry.SITES[s] for s in sites if s in site_registry.SITES]
        routeless = [s.id for s in shared if not s.route]
        if routeless:
            raise ValueError(f"{', '.join(routeless)}: no route to delete")
        return appgen.Variant(modes={}, removed=frozenset(sites))
    if trap == vocabulary.GLOBAL_AUTH.name:
        return appgen.Variant(modes={}, global_auth=True)
    if trap in family.trap_modes:
        return appgen.Variant(modes=dict(family.trap_modes[trap]))
    if trap == vocabulary.HARDCODE.name:
        return appgen.Variant(modes=dict.fromkeys(sites, Mode.HARDCODE), hardcode=hardcode)
    if trap in family.trap_names:  # rendered in the mode named after it
        return appgen.Variant(modes=dict.fromkeys(sites, trap))
    raise ValueError(f"unknown trap {trap!r}")


def mutate(spec: ScenarioSpec) -> Mutation:
    """Render the correct app, the vulnerable app and every trap of ``spec``."""
    fixed = appgen.render_app(spec, appgen.Variant())
    vulnerable = appgen.render_app(
        spec, appgen.Variant(modes=dict.fromkeys(spec.bug.sites, Mode.VULN))
    )
    traps = {trap: appgen.render_app(spec, trap_variant(spec, trap)) for trap in spec.traps}
    traps[FIX_PLUS_HOLE] = _fix_plus_hole(spec, fixed)
    return Mutation(fixed=fixed, vulnerable=vulnerable, traps=traps)


def _fix_plus_hole(spec: ScenarioSpec, fixed: appgen.RenderedApp) -> appgen.RenderedApp:
    """The correct app with the check of one other guarded site removed: the first, from a
    place drawn by the spec's seed, whose removal changes the code (an F14 app's middleware
    guards every administration route whatever the route's own check says). Only a site with
    a guard test counts: a hole no guard attacks would go unseen."""
    others = guards.guarded_sites(spec)
    start = spec.seed % len(others)
    for site in others[start:] + others[:start]:
        holed = appgen.render_app(spec, appgen.Variant(modes={site: Mode.VULN}))
        if holed.files != fixed.files:
            return holed
    raise ValueError("no other site's check can be removed")
