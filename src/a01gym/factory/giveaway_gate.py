"""The giveaway gate: each probe's hit rate per family against chance, and the build's verdict.

The probes (:mod:`a01gym.factory.giveaways`) name one file per scenario; a *hit* is a file the
reference fix changes (or a helper it starts using, where a probe names one), and chance is
the hit rate of a file drawn at random from the app's Python files. :func:`report` gives the
rates per family, and for the probes that also name lines, how often those are lines the fix
changes (a *line hit*: the issue asks how often a probe points at "the right file and line").
The gate judges files: a line hit is a file hit.

The gate's question is whether a probe finds a family's bug *far* above chance, and with 14
scenarios a family a rate is coarse: one hit is 1.6x chance, two are 3.2x, and two hits happen
by luck to a probe no better than chance one time in eight. So a probe fails a family only if
its hits are unlikely (one-sided binomial tail below :data:`GATE_ALPHA`) for a probe that
finds the bug :data:`GATE_FACTOR` times as often as chance (``ProbeRate.p_value``);
:func:`failures` lists them. Hits are expected hits (``ProbeRate``): a probe that found
several files equally good scores the share of them the fix changes, not the one its draw
named, so the verdict does not change when a change to any app's text re-draws a tie.

Chance counts every file alike, but a probe has preferences of its own: the largest file is
the same one whether or not the bug is in it. So each rate also has a ``base``: how often the
probe names the same files in the *other* families' apps, where they hold no bug. A rate far
above chance and near its base says the family's bug sits where the probe looks anyway (the
core module every app has); a rate far above its base (``base_p_value``) says the bug itself
draws the probe, which is the giveaway the gate is for.

G1-G6 judge a scenario in its sandboxes; a giveaway is a property of many, so :func:`judge`
runs over the whole cache once a build's candidates are in, and takes out of a failing family
the scenarios of this build the probe finds."""

from __future__ import annotations

import collections
import logging
import math
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, Field

from a01gym.factory import giveaways, layout
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.factory.config import GateConfig
from a01gym.factory.spec import Layout
from a01gym.scenario.bundle import Bundle

__all__ = [
    "GATE_ALPHA",
    "GATE_FACTOR",
    "GATE_MIN_SCENARIOS",
    "FamilyRates",
    "GiveawayVerdict",
    "ProbeRate",
    "binomial_tail",
    "expected_hit",
    "failures",
    "judge",
    "report",
]

logger = logging.getLogger(__name__)


GATE_FACTOR = 2.0
"""A probe may find a family's bug up to this many times as often as chance (issue 28)."""
GATE_ALPHA = 0.01
"""...unless its hits would happen less often than this to a probe that good."""
GATE_MIN_SCENARIOS = 10
"""Fewer and a family is not judged: 3 hits of 3 pass the test for a mere preference (base 0.3)."""


def binomial_tail(hits: float, trials: int, p: float) -> float:
    """P(X >= hits) for X ~ Binomial(trials, p); between whole counts (expected hits, see
    :class:`ProbeRate`) the linear interpolation of the two tails."""
    p = min(1.0, p)

    def tail(k: int) -> float:
        return sum(
            math.comb(trials, j) * p**j * (1 - p) ** (trials - j) for j in range(k, trials + 1)
        )

    whole = math.floor(hits)
    if whole == hits or whole >= trials:
        return tail(whole)
    return tail(whole) + (hits - whole) * (tail(whole + 1) - tail(whole))


def _p_value(hits: float, trials: int, rate: float) -> float:
    """How often a probe finding the bug ``GATE_FACTOR`` x as often as ``rate`` hits this often."""
    return round(binomial_tail(hits, trials, GATE_FACTOR * rate), 5)


class ProbeRate(BaseModel):
    """One probe over one family's scenarios.

    Counts are expected counts: where a probe found several files equally good it names one
    by a draw, and a scenario counts the share of those files the fix changes (0.5 of a hit
    for one of two). A single draw moved one build's count by a few scenarios whenever any
    app's text changed (docs/families.md, "How much of a pass is luck"); the expectation moves
    only when what the probe sees does."""

    hits: float
    scenarios: int
    rate: float
    chance: float
    ratio: float = 0.0  # rate / chance
    p_value: float = 1.0
    """How often a probe finding the bug ``GATE_FACTOR`` × as often as chance hits this often."""
    base: float = 0.0
    """How often the probe names the bug's files in the *other* families' apps, where those
    files hold no bug: its preference for them, bug or not."""
    lift: float | None = None  # rate / base (None: base 0)
    base_p_value: float = 1.0
    """As ``p_value``, against ``GATE_FACTOR`` × ``base``: small only when the bug itself
    draws the probe to its file."""
    line_hits: float | None = None
    """Scenarios where the lines it names are lines the fix changes (None: it names files)."""
    line_rate: float | None = None

    @property
    def far_above_chance(self) -> bool:
        return self.p_value < GATE_ALPHA

    @property
    def far_above_base(self) -> bool:
        return self.base_p_value < GATE_ALPHA

    def cell(self) -> str:
        """``rate/chance=ratio`` (``!`` far above chance), then the base (``*`` far above it)."""
        return (
            f"{self.rate:.2f}/{self.chance:.2f}={self.ratio:.1f}x"
            f"{'!' if self.far_above_chance else ''} base {self.base:.2f}"
            f"{'*' if self.far_above_base else ''}"
            + ("" if self.line_rate is None else f" line {self.line_rate:.2f}")
        )


class FamilyRates(BaseModel):
    family: str
    scenarios: int
    probes: dict[str, ProbeRate]


class _Probed(NamedTuple):
    rows: list[FamilyRates]
    found: dict[str, dict[str, float]]  # probe -> content hash -> that scenario's expected hit
    chance: dict[str, float]  # content hash -> that scenario's chance


def report(bundles: Sequence[Bundle]) -> list[FamilyRates]:
    """Each probe's hit rate per family against chance (plus an ``ALL`` row).

    The same scenarios give the same report in any order: they are probed sorted by content
    hash (the nearest app is the first of equally near ones)."""
    return _probe(bundles).rows


def _probe(bundles: Sequence[Bundle]) -> _Probed:
    bundles = sorted(bundles, key=lambda b: b.manifest.content_hash)
    raw = [giveaways.python_files(b) for b in bundles]
    population = [{p: giveaways.normalise(t) for p, t in files.items()} for files in raw]
    by_family: dict[str, list[int]] = collections.defaultdict(list)
    for index, bundle in enumerate(bundles):
        by_family[bundle.hidden.labels["family"]].append(index)
    by_family["ALL"] = list(range(len(bundles)))
    guesses = {
        name: [
            probe(b, population if name == "nearest_diff" else raw, i)
            for i, b in enumerate(bundles)
        ]
        for name, probe in giveaways.PROBES.items()
    }
    fixed = [set(b.hidden.reference_fix.files) for b in bundles]
    changed = [_changed_lines(b) for b in bundles]
    # the base compares paths across apps in the skeleton's own layout (a layout renames them)
    layouts = [Layout.model_validate_json(b.hidden.labels.get("layout", "{}")) for b in bundles]
    roles = [{layout.canonical(lay, p) for p in f} for lay, f in zip(layouts, fixed, strict=True)]
    named = {
        name: [
            [layout.canonical(lay, c.path) for c in giveaways.candidates(g)] if g else []
            for lay, g in zip(layouts, guessed, strict=True)
        ]
        for name, guessed in guesses.items()
    }
    chance = [len(f & set(r)) / len(r) if r else 0.0 for f, r in zip(fixed, raw, strict=True)]
    labels = [b.hidden.labels["family"] for b in bundles]
    elsewhere = {f: [j for j, g in enumerate(labels) if g != f] for f in set(labels)}
    found = {
        name: [
            expected_hit(g, lambda c, i=i: c.path in fixed[i] or _put_to_use(c, bundles[i]))
            for i, g in enumerate(guessed)
        ]
        for name, guessed in guesses.items()
    }
    rows = []
    for family in sorted(by_family):
        members = by_family[family]
        expected = sum(chance[i] for i in members) / len(members)
        probes = {}
        for name, guessed in guesses.items():
            hits = sum(found[name][i] for i in members)
            rate = hits / len(members)
            line_hits = (
                sum(
                    expected_hit(
                        guessed[i],
                        lambda c, i=i: (
                            _on_changed_line(c, changed[i]) or _put_to_use(c, bundles[i])
                        ),
                    )
                    for i in members
                )
                if name in giveaways.LINE_PROBES
                else None
            )
            base = sum(
                sum(
                    sum(path in roles[i] for path in named[name][j]) / len(named[name][j])
                    for j in elsewhere[labels[i]]
                    if named[name][j]
                )
                / max(1, len(elsewhere[labels[i]]))
                for i in members
            ) / len(members)
            probes[name] = ProbeRate(
                hits=round(hits, 2),
                scenarios=len(members),
                rate=round(rate, 3),
                chance=round(expected, 3),
                ratio=round(rate / expected, 2) if expected else 0.0,
                p_value=_p_value(hits, len(members), expected),
                base=round(base, 3),
                lift=round(rate / base, 2) if base else None,
                base_p_value=_p_value(hits, len(members), base),
                line_hits=None if line_hits is None else round(line_hits, 2),
                line_rate=None if line_hits is None else round(line_hits / len(members), 3),
            )
        rows.append(FamilyRates(family=family, scenarios=len(members), probes=probes))
    hashes = [b.manifest.content_hash for b in bundles]
    return _Probed(
        rows,
        {name: dict(zip(hashes, hit, strict=True)) for name, hit in found.items()},
        dict(zip(hashes, chance, strict=True)),
    )


def _changed_lines(bundle: Bundle) -> dict[str, set[int]]:
    """The lines (1-based) of each file the reference fix edits that it changes; where it only
    adds lines, the line on each side of the gap."""
    lines: dict[str, set[int]] = {}
    for path, text in bundle.hidden.reference_fix.files.items():
        before = bundle.workspace.get(path)
        if before is None or text is None:
            continue
        lines[path] = set()
        for i1, i2, _, _ in giveaways.changed_regions(before.decode(errors="replace"), text):
            first, last = giveaways.line_span(i1, i2)
            lines[path].update(range(first, last + 1))
    return lines


def _put_to_use(pointer: giveaways.Pointer, bundle: Bundle) -> bool:
    """Whether the reference fix starts using the name ``pointer`` names (``unused_helper``'s
    helper): more uses of it in the files the fix writes than those files had. The probe then
    found the bug through the helper, though the fix changes the file that calls it, not the
    one that defines it (an F11 app's dead ``landing_target``, 2026-12-02: docs/families.md)."""
    if pointer.name is None:
        return False
    word = re.compile(rf"\b{re.escape(pointer.name)}\b")
    fix = bundle.hidden.reference_fix.files
    after = sum(len(word.findall(text)) for text in fix.values() if text is not None)
    before = sum(
        len(word.findall(bundle.workspace[path].decode(errors="replace")))
        for path in fix
        if path in bundle.workspace
    )
    return after > before


def expected_hit(
    pointer: giveaways.Pointer | None, hit: Callable[[giveaways.Pointer], bool]
) -> float:
    """The share of a probe's equally good candidates that ``hit`` (0 where it names none)."""
    if pointer is None:
        return 0.0
    every = giveaways.candidates(pointer)
    return sum(map(hit, every)) / len(every)


def _on_changed_line(pointer: giveaways.Pointer | None, changed: dict[str, set[int]]) -> bool:
    if pointer is None or pointer.lines is None or pointer.path not in changed:
        return False
    first, last = pointer.lines
    return not changed[pointer.path].isdisjoint(range(first, last + 1))


def failures(
    rows: Sequence[FamilyRates], probes: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """(family, probe) for each probe (of ``probes``) far above chance in a judged family."""
    return [
        (row.family, name)
        for row in rows
        if row.family != "ALL" and row.scenarios >= GATE_MIN_SCENARIOS
        for name, rate in row.probes.items()
        if rate.far_above_chance and (probes is None or name in probes)
    ]


class GiveawayVerdict(BaseModel):
    """The giveaway gate's run over a cache (:mod:`a01gym.factory.giveaways`)."""

    mode: str = Field(description="report | reject (GateConfig.giveaways).")
    probes: list[str] = Field(description="The probes the gate applies.")
    scenarios: int = Field(description="Scenarios probed: the whole cache, both splits.")
    families: list[FamilyRates]
    failures: list[tuple[str, str]] = Field(description="(family, probe) far above chance.")
    removed: dict[str, str] = Field(
        default_factory=dict, description="Hash -> family of each scenario this build lost."
    )


def judge(
    cache: ScenarioCache, config: GateConfig, hashes: list[str], provenance: Provenance
) -> GiveawayVerdict:
    """Run the giveaway probes over the whole cache (an agent meets every episode of it, and
    the nearest-app diff compares with all of them) and, in ``reject`` mode, take out of each
    failing family this build's scenarios (``hashes``) the probe finds, each recorded as a
    rejection: the surest finds first, until the family's rate is no longer far above chance.

    Taking all of them out lost seed 62's 300 its 14 F18 scenarios, ``sibling_asymmetry``
    naming the form router in 5.5 (11.8x chance; docs/families.md, "The gate keeps a family").
    What stays is what the probe does not find, as datasets filter out what a shortcut solves.
    Rates are as probed once; a family still failing without this build's finds loses the rest.

    A family is judged once the cache holds ``GATE_MIN_SCENARIOS`` of it (a few
    hundred scenarios over every family), so a small build only reports. Probing costs ~45 ms
    of CPU a scenario, linear in the cache (10.7 CPU-s for 240), besides loading each bundle."""
    entries = cache.entries()
    probed = _probe([cache.load(entry.hash) for entry in entries])
    rows = probed.rows
    failed = failures(rows, config.giveaway_probes)
    verdict = GiveawayVerdict(
        mode=config.giveaways,
        probes=config.giveaway_probes,
        scenarios=len(entries),
        families=rows,
        failures=failed,
    )
    if config.giveaways != "reject" or not failed:
        return verdict
    by_family = {row.family: row for row in rows}
    by_hash = {entry.hash: entry for entry in entries}
    ours = set(hashes)
    reasons: dict[str, str] = {}
    for family, probe in failed:
        rate = by_family[family].probes[probe]
        why = (
            f"giveaways: family {family} fails: {probe} names the fixed file in {rate.hits:g} "
            f"of {rate.scenarios} ({rate.ratio:.1f}x chance {rate.chance:.2f})"
        )
        found = probed.found[probe]
        members = [h for h in by_hash if by_hash[h].family == family and h not in reasons]
        finds = sorted(
            (h for h in members if h in ours and found[h] > 0), key=lambda h: (-found[h], h)
        )
        while finds and _fails(members, found, probed.chance):
            digest = finds.pop(0)
            members.remove(digest)
            reasons[digest] = f"{why}, and finds this one"
        if _fails(members, found, probed.chance):
            for digest in (h for h in members if h in ours):
                reasons[digest] = f"{why}, still without this build's finds"
    for digest, reason in sorted(reasons.items()):
        entry = by_hash[digest]
        cache.remove(digest)
        verdict.removed[digest] = entry.family
        cache.reject(
            provenance.rejection(
                spec_sha256=entry.spec_sha256,
                family=entry.family,
                domain=entry.domain,
                stage="giveaways",
                reason=reason,
            )
        )
    logger.warning(
        "giveaway gate: %s; %d scenarios of this build removed",
        ", ".join(f"{f} {p}" for f, p in failed),
        len(verdict.removed),
    )
    return verdict


def _fails(members: list[str], found: dict[str, float], chance: dict[str, float]) -> bool:
    """Whether a probe's finds among ``members`` are far above chance (``ProbeRate.p_value``)."""
    if not members:
        return False
    expected = sum(chance[h] for h in members) / len(members)
    return _p_value(sum(found[h] for h in members), len(members), expected) < GATE_ALPHA
