"""Authors turn a factory config into ``ScenarioSpec`` drafts, behind one ``Protocol``.

:func:`plan` fixes *what* to draft (family, domain, difficulty band, seed per candidate) from the
config alone, so every author covers the catalog the same way and a rebuild with the same
config and seed asks for the same drafts. The :class:`TemplateAuthor` (the default) is
deterministic and offline; the LLM author lives in :mod:`a01gym.factory.llm_author`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from typing import Literal, Protocol, runtime_checkable

from a01gym.errors import ScenarioError
from a01gym.factory import domains, families, layoutdraw, styles
from a01gym.factory.config import FactoryConfig
from a01gym.factory.spec import (
    DECOY_KINDS,
    ActorSpec,
    BugTarget,
    Knobs,
    PolicyFeatures,
    ScenarioSpec,
    canonical_policy,
)

__all__ = [
    "MAX_TRAPS",
    "Author",
    "AuthorError",
    "DraftRequest",
    "TemplateAuthor",
    "applicable_traps",
    "draw_companions",
    "plan",
    "select_traps",
]

Band = Literal["easy", "medium", "hard"]


class AuthorError(ScenarioError):
    """An author could not produce a valid spec; ``reason`` is recorded with the rejection."""

    def __init__(self, reason: str, *, hint: str | None = None) -> None:
        self.reason = reason
        super().__init__(reason, hint=hint)


@dataclasses.dataclass(frozen=True)
class DraftRequest:
    """One candidate to draft."""

    index: int
    seed: int
    family: str
    domain: str
    band: Band


@runtime_checkable
class Author(Protocol):
    """Writes one spec per request. ``name``/``model`` go into the cache's provenance."""

    name: str
    model: str | None

    def draft(self, request: DraftRequest) -> ScenarioSpec:
        """A valid spec for ``request``.

        Raises:
            AuthorError: when no valid spec could be produced (the reason is recorded).
        """
        ...


def _derive(seed: int, *parts: object) -> int:
    text = "\x00".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8]) >> 1


def plan(config: FactoryConfig) -> list[DraftRequest]:
    """The candidates of a run: families round-robin, domains interleaved, bands weighted."""
    rng = random.Random(_derive(config.seed, "plan"))
    fams = sorted(config.families)
    doms = sorted(config.domains)
    rng.shuffle(doms)
    bands = sorted(config.difficulty)
    weights = [config.difficulty[b] for b in bands]
    requests = []
    for index in range(config.count):
        family = fams[index % len(fams)]
        domain = doms[(index + index // len(fams)) % len(doms)]
        band = rng.choices(bands, weights=weights)[0]
        requests.append(
            DraftRequest(
                index=index,
                seed=_derive(config.seed, "draft", index),
                family=family,
                domain=domain,
                band=band,  # type: ignore[arg-type]
            )
        )
    return requests


_NAMES = {
    "victim": ("alice", "amara", "arjun", "anouk"),
    "peer": ("bob", "bilal", "bea", "bruno"),
    "outsider": ("carol", "chen", "chidi", "clara"),
    "outsider2": ("dave", "dina", "dmitri", "diego"),
    "admin": ("admin", "root_ops", "sysadmin", "it_admin"),
    "support": ("sam", "sasha", "sol"),
    "manager": ("mia", "marek", "maya"),
}


def applicable_traps(family_id: str, sites: list[str], features: PolicyFeatures) -> list[str]:
    """The family's traps that the hidden suite can tell apart from a fix for this spec."""
    fam = families.family(family_id)
    traps = [t for t in fam.trap_names if fam.trap_sites.get(t, sites[0]) in sites]
    if len(sites) > 1:
        traps += [t.name for t in fam.multi_site_traps]
    return [t for t in traps if fam.trap_applies(t, sites, features)]


MAX_TRAPS = 4
"""Traps per spec: each costs one sandbox run per gate; the cache as a whole covers them all."""


def select_traps(traps: list[str], rng: random.Random, limit: int = MAX_TRAPS) -> list[str]:
    """At most ``limit`` traps, always keeping ``fix_one_sibling`` when it applies."""
    keep = [t for t in traps if t == "fix_one_sibling"]
    rest = [t for t in traps if t not in keep]
    chosen = keep + rng.sample(rest, min(len(rest), limit - len(keep)))
    return sorted(chosen, key=traps.index)


class TemplateAuthor:
    """Deterministic, offline: the same request always gives the same spec."""

    name = "template"
    model: str | None = None

    def draft(self, request: DraftRequest) -> ScenarioSpec:
        """Draft a spec for ``request`` from the built-in domains and the family catalog."""
        rng = random.Random(request.seed)
        fam = families.family(request.family)
        features = PolicyFeatures(
            shared=rng.random() < 0.7,
            support_reads=rng.random() < 0.4,
            manager_reads=rng.random() < 0.85,  # F20's companion needs one
            admin_edits=rng.random() < 0.7,
        )
        if "manager" in fam.needs_roles:
            features = features.model_copy(update={"manager_reads": True})
        if "support" in fam.needs_roles:
            features = features.model_copy(update={"support_reads": True})
        names = {slot: rng.choice(pool) for slot, pool in _NAMES.items()}
        actors = [
            ActorSpec(name="anonymous", role="anonymous"),
            ActorSpec(name=names["victim"], role="user", tenant="a"),
            ActorSpec(name=names["peer"], role="user", tenant="a"),
            ActorSpec(name=names["outsider"], role="user", tenant="b"),
            ActorSpec(name=names["outsider2"], role="user", tenant="b"),
            ActorSpec(name=names["admin"], role="admin", tenant="a"),
        ]
        if features.support_reads:
            actors.append(ActorSpec(name=names["support"], role="support"))
        if features.manager_reads:
            actors.append(ActorSpec(name=names["manager"], role="manager", tenant="b"))
        band = request.band
        max_sites = len(fam.sites)
        if band == "easy":
            count, distance, decoys = 1, "route", 0
            hint = rng.choice((2, 3, 4))
            indirection = fam.indirections[0]
        elif band == "medium":
            count = min(max_sites, rng.choice((1, 2)))
            distance = rng.choice(("route", "service"))
            decoys = rng.choice((0, 1))
            hint = rng.choice((1, 2, 3))
            indirection = rng.choice(fam.indirections)
        else:
            count = min(max_sites, rng.choice((2, 3)))
            distance = rng.choice(("service", "repository"))
            decoys = rng.choice((1, 2, 3))
            hint = rng.choice((0, 1))
            indirection = rng.choice(fam.indirections)
        sites = sorted(rng.sample(fam.sites, count), key=fam.sites.index)
        roles = {actor.role for actor in actors}
        return ScenarioSpec(
            seed=request.seed,
            domain=domains.domain(request.domain),
            actors=actors,
            policy=canonical_policy(features),
            bug=BugTarget(family=fam.id, cwe=fam.cwe, sites=sites),
            decoys=sorted(rng.sample(DECOY_KINDS, decoys)),
            traps=select_traps(applicable_traps(fam.id, sites, features), rng),
            knobs=Knobs(
                distance=distance,
                indirection=indirection,
                hint_level=hint,
                data_access=styles.draw(request.seed),
            ),
            companions=draw_companions(request.seed, fam.id, roles),
            layout=layoutdraw.draw(request.seed),
        )


COMPANION_COUNTS = (5, 6)
"""How many companion families an app draws (uniformly) of the 8. Over a 300-draft build each
one's routes are in 68-73% of the apps beside another family's bug (F12's in all of them,
``Family.every_app``; F20's in 58%: it needs the manager actor, drawn in 85% of apps for that
reason), against 1 in 21 as the bug. The nearest-app diff probe (factory/giveaways.py)
finds a bug at 5.5x chance with none; with 3-4 at 2.2x, F19-F21 far above chance (their
router was the one file the nearest app lacked); with 5-6 at 2.0-2.1x over three builds (6-7
did no better); with all 8 at 2.8x, F21 17x: when every app serves every companion, a broken
rendering is the one that no other app shares."""


def draw_companions(seed: int, family_id: str, roles: set[str]) -> list[str]:
    """The companion families of a spec: drawn from their own stream of the seed, so the rest
    of a draft is the same with or without them, and those served in every app
    (``Family.every_app``: F12's CORS module, drawn in 5-6 of 8, was a file about 30% of apps
    lacked, and ``nearest_diff`` named F12's bug file at 2.2x chance over seeds 31-40;
    docs/families.md, "main.py reads alike")."""
    rng = random.Random(_derive(seed, "companions"))
    pool = [
        c
        for c in families.COMPANIONS
        if c != family_id and set(families.family(c).needs_roles) <= roles
    ]
    drawn = rng.sample(pool, min(len(pool), rng.choice(COMPANION_COUNTS)))
    always = {c for c in pool if families.family(c).every_app}
    return sorted({*drawn, *always} - {family_id})
