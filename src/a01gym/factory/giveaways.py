"""Giveaway probes: shortcut finders that point at the bug without reasoning about the policy.

A trained policy learns whatever finds the bug cheapest. If the code gives it away (the file
that differs from every other scenario's, a security helper nobody calls), the policy learns
that instead of access control. Each probe here sees only what an agent sees across many
episodes, the workspaces (the app and its TASK.md, never anything hidden), and names one
file per scenario; a *hit* is a file the reference fix changes. Its hit rate is compared with
chance, the hit rate of a file drawn at random from the app's Python files.

* ``nearest_diff``: the file that differs most from the most similar *other* scenario, with
  names, strings and numbers abstracted away (what an agent that remembers one episode's app
  can diff against). Files match by path, else by content (a layout,
  :mod:`a01gym.factory.layout`, may have renamed the module: a file of the same text is the
  same file, one under a new name is compared with the most similar file the nearest app has
  under a name this app lacks). Files with nothing to compare with all score "all new"; the
  tie between them is drawn per scenario and file. It used to go to the order the app's files
  were written in, which an agent never sees and which put the bug's family first: a draw is
  what an agent that remembers one app can do, no less (it cannot tell two new files apart);
* ``unused_helper``: a file defining a function or setting no other line uses (a check the
  bug stopped calling; several such files: a draw);
* ``sibling_asymmetry``: the file with a function that lacks a check-like call (a name with
  ``scope``, ``check``, ``require``, ``can_``, ``verify``, ...) that the largest share of its
  siblings make (the other route handlers of its module, or the other plain functions of its
  module or class): the list method that does not filter where the others do (a tie between
  files is drawn);
* ``policy_keywords``: the file whose path shares the most words with the task's *last*
  policy line (the line a template would append for its bug);
* ``largest_file``: the longest Python file (a baseline any agent can run).

:func:`report` gives the rates per family; ``tools/giveaway_probe.py`` prints them for a
population of compiled drafts (no sandbox needed: the code is fixed at compile time).

The gate's question is whether a probe finds a family's bug *far* above chance, and with 14
scenarios a family a rate is coarse: one hit is 1.6x chance, two are 3.2x, and two hits happen
by luck to a probe no better than chance one time in eight. So a probe fails a family only if
its hits are unlikely (one-sided binomial tail below :data:`GATE_ALPHA`) for a probe that
finds the bug :data:`GATE_FACTOR` times as often as chance (``ProbeRate.p_value``);
:func:`failures` lists them.

Chance counts every file alike, but a probe has preferences of its own: the largest file is
the same one whether or not the bug is in it. So each rate also has a ``base``: how often the
probe names the same files in the *other* families' apps, where they hold no bug. A rate far
above chance and near its base says the family's bug sits where the probe looks anyway (the
core module every app has); a rate far above its base (``base_p_value``) says the bug itself
draws the probe, which is the giveaway the gate is for.
"""

from __future__ import annotations

import ast
import collections
import difflib
import hashlib
import io
import keyword
import math
import re
import tokenize
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from a01gym.factory import layout
from a01gym.factory.spec import Layout
from a01gym.scenario.bundle import Bundle

__all__ = [
    "GATE_ALPHA",
    "GATE_FACTOR",
    "GATE_MIN_SCENARIOS",
    "PROBES",
    "FamilyRates",
    "ProbeRate",
    "failures",
    "normalise",
    "report",
]


def normalise(source: str) -> str:
    """``source`` with every name, string and number replaced by a placeholder, and comments
    dropped: two apps rendered from one template in different domains read the same."""
    out: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
                out.append("N")
            elif token.type == tokenize.STRING:
                out.append("S")
            elif token.type == tokenize.NUMBER:
                out.append("0")
            elif token.type in (tokenize.NEWLINE, tokenize.NL):
                out.append("\n")
            elif token.type in (tokenize.COMMENT, tokenize.ENCODING):
                continue
            else:
                out.append(token.string)
    except (tokenize.TokenError, IndentationError):
        return source
    return " ".join(out)


def _python(bundle: Bundle) -> dict[str, str]:
    return {
        path: content.decode(errors="replace")
        for path, content in bundle.workspace.items()
        if path.endswith(".py")
    }


def _nearest_diff(bundle: Bundle, population: Sequence[dict[str, str]], own: int) -> str | None:
    mine = population[own]
    best, best_same = None, -1
    for index, other in enumerate(population):
        if index == own:
            continue
        # files match by content, not path: layouts rename modules, and an agent that
        # remembers one app recognises a file it has read under another name
        texts = set(other.values())
        same = sum(text in texts for text in mine.values())
        if same > best_same:
            best, best_same = other, same
    if best is None:
        return None
    texts, own = set(best.values()), set(mine.values())
    counterparts = _paired(
        {path: text for path, text in mine.items() if path not in best and text not in texts},
        {path: text for path, text in best.items() if path not in mine and text not in own},
    )

    def counterpart(path: str, text: str) -> str:
        return best[path] if path in best else counterparts.get(path, "")

    changed = {
        path: 1.0 - difflib.SequenceMatcher(None, text, counterpart(path, text)).quick_ratio()
        for path, text in mine.items()
        if text not in texts
    }

    # ties (files the nearest app lacks all score 1.0) go to a draw per scenario and file,
    # never to the order the app's files were written in
    return max(changed, key=lambda p: (changed[p], _draw(bundle, p))) if changed else None


def _paired(mine: dict[str, str], theirs: dict[str, str]) -> dict[str, str]:
    """Each of ``mine``'s files paired with the most similar of ``theirs`` (shared lines over
    all lines), most similar pairs first, each file used once: a file with no partner left is
    new. (A set overlap, not difflib: difflib took 14 of 43 s of a 150-app report.)"""
    lines = {path: set(text.splitlines()) for path, text in {**mine, **theirs}.items()}
    pairs = sorted(
        (
            (len(lines[a] & lines[b]) / max(1, len(lines[a] | lines[b])), a, b)
            for a in mine
            for b in theirs
        ),
        reverse=True,
    )
    paired: dict[str, str] = {}
    used: set[str] = set()
    for similarity, a, b in pairs:
        if similarity > 0 and a not in paired and b not in used:
            paired[a] = theirs[b]
            used.add(b)
    return paired


def _draw(bundle: Bundle, path: str) -> bytes:
    """A tie-break per scenario and file that no app's structure decides."""
    return hashlib.sha256(f"{bundle.manifest.content_hash}\x00{path}".encode()).digest()


_DEFINED = re.compile(r"^(?:def|async def)\s+(\w+)|^([A-Z][A-Z0-9_]+)\s*=", re.MULTILINE)


def _unused_helper(bundle: Bundle, population: Sequence[dict[str, str]], own: int) -> str | None:
    files = population[own]
    uses = collections.Counter(re.findall(r"\w+", "\n".join(files.values())))
    found = set()
    for path, text in files.items():
        for match in _DEFINED.finditer(text):
            name = match.group(1) or match.group(2)
            if name.startswith("__"):
                continue
            if uses[name] == 1:
                # defined and never used: decorated routes are used by the framework
                before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
                if not before.startswith("@"):
                    found.add(path)
                    break
    # several files with one: a draw, never the order of their names (a layout renames them)
    return max(found, key=lambda p: _draw(bundle, p)) if found else None


_CHECKLIKE = re.compile(
    r"scope|check|require|can_|allow|auth|admin|owner|tenant|permi|verify|valid|policy|"
    r"current_user|signature|trusted|csrf|forbid",
    re.IGNORECASE,
)


def _calls(function: ast.AST) -> set[str]:
    """The check-like names a function calls or depends on (``policy.read_scope(...)``,
    ``Depends(security.require_admin)``): the functions, never the modules they come from (a
    layout may call the security module ``auth``)."""
    names, modules = set(), set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
            if isinstance(node.value, ast.Name):
                modules.add(node.value.id)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return {name for name in names - modules if _CHECKLIKE.search(name)}


def _sibling_asymmetry(
    bundle: Bundle, population: Sequence[dict[str, str]], own: int
) -> str | None:
    # siblings: the route handlers (decorated) of one module or class, or its plain
    # functions; a function's asymmetry is the largest share of its siblings (at least two)
    # that use a check-like name it does not use
    scores: dict[str, float] = {}
    for path, text in population[own].items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for body in bodies:
            functions = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for decorated in (True, False):
                group = [_calls(f) for f in functions if bool(f.decorator_list) == decorated]
                for index, mine in enumerate(group):
                    others = group[:index] + group[index + 1 :]
                    for name in set().union(*others) - mine if others else ():
                        having = sum(name in o for o in others)
                        if having >= 2:
                            share = having / len(others)
                            scores[path] = max(scores.get(path, 0.0), share)
    if not scores:
        return None
    return max(scores, key=lambda p: (scores[p], _draw(bundle, p)))


_WORD = re.compile(r"[a-z]+")


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _policy_keywords(bundle: Bundle, population: Sequence[dict[str, str]], own: int) -> str | None:
    task = bundle.workspace.get("TASK.md", b"").decode(errors="replace")
    policy = task.split("## Access policy", 1)[-1].split("\n## ", 1)[0]
    lines = [line for line in policy.splitlines() if line.startswith("- ")]
    if not lines:
        return None
    words = {_stem(w) for w in _WORD.findall(lines[-1].lower()) if len(w) > 2}
    scores = {
        path: len(words & ({_stem(w) for w in _WORD.findall(path.lower())} - {"app", "py"}))
        for path in population[own]
    }
    best = max(scores, key=lambda p: (scores[p], _draw(bundle, p)), default=None)
    return best if best is not None and scores[best] else None


def _largest_file(bundle: Bundle, population: Sequence[dict[str, str]], own: int) -> str | None:
    files = population[own]
    return max(files, key=lambda p: len(files[p])) if files else None


Probe = Callable[[Bundle, Sequence[dict[str, str]], int], "str | None"]

PROBES: dict[str, Probe] = {
    "nearest_diff": _nearest_diff,
    "unused_helper": _unused_helper,
    "sibling_asymmetry": _sibling_asymmetry,
    "policy_keywords": _policy_keywords,
    "largest_file": _largest_file,
}
"""Probe name -> the file it points at in one scenario of a population (None: no guess)."""


GATE_FACTOR = 2.0
"""A probe may find a family's bug up to this many times as often as chance (issue 28)."""
GATE_ALPHA = 0.01
"""...unless its hits would happen less often than this to a probe that good."""
GATE_MIN_SCENARIOS = 10
"""A family is judged only with this many scenarios: with 3, three hits of three fall under
``GATE_ALPHA`` for a probe that merely prefers the family's file (a base of 0.3, as the
repository module has), and a small build would lose a family to luck."""


def _tail(hits: int, trials: int, p: float) -> float:
    """P(X >= hits) for X ~ Binomial(trials, p)."""
    p = min(1.0, p)
    return sum(
        math.comb(trials, k) * p**k * (1 - p) ** (trials - k) for k in range(hits, trials + 1)
    )


class ProbeRate(BaseModel):
    hits: int
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

    @property
    def far_above_chance(self) -> bool:
        return self.p_value < GATE_ALPHA

    @property
    def far_above_base(self) -> bool:
        return self.base_p_value < GATE_ALPHA


class FamilyRates(BaseModel):
    family: str
    scenarios: int
    probes: dict[str, ProbeRate]


def report(bundles: Sequence[Bundle]) -> list[FamilyRates]:
    """Each probe's hit rate per family against chance (plus an ``ALL`` row).

    The same scenarios give the same report in any order: they are probed sorted by content
    hash (the nearest app is the first of equally near ones)."""
    bundles = sorted(bundles, key=lambda b: b.manifest.content_hash)
    raw = [_python(b) for b in bundles]
    population = [{p: normalise(t) for p, t in files.items()} for files in raw]
    by_family: dict[str, list[int]] = collections.defaultdict(list)
    for index, bundle in enumerate(bundles):
        by_family[bundle.hidden.labels["family"]].append(index)
    by_family["ALL"] = list(range(len(bundles)))
    guesses = {
        name: [
            probe(b, population if name == "nearest_diff" else raw, i)
            for i, b in enumerate(bundles)
        ]
        for name, probe in PROBES.items()
    }
    fixed = [set(b.hidden.reference_fix.files) for b in bundles]
    # the base compares paths across apps in the skeleton's own layout (a layout renames them)
    layouts = [Layout.model_validate_json(b.hidden.labels.get("layout", "{}")) for b in bundles]
    roles = [{layout.canonical(lay, p) for p in f} for lay, f in zip(layouts, fixed, strict=True)]
    named = {
        name: [
            layout.canonical(lay, g) if g else None for lay, g in zip(layouts, guessed, strict=True)
        ]
        for name, guessed in guesses.items()
    }
    chance = [len(f & set(r)) / len(r) if r else 0.0 for f, r in zip(fixed, raw, strict=True)]
    labels = [b.hidden.labels["family"] for b in bundles]
    elsewhere = {f: [j for j, g in enumerate(labels) if g != f] for f in set(labels)}
    rows = []
    for family in sorted(by_family):
        members = by_family[family]
        expected = sum(chance[i] for i in members) / len(members)
        probes = {}
        for name, guessed in guesses.items():
            hits = sum(guessed[i] in fixed[i] for i in members)
            rate = hits / len(members)
            base = sum(
                sum(named[name][j] in roles[i] for j in elsewhere[labels[i]])
                / max(1, len(elsewhere[labels[i]]))
                for i in members
            ) / len(members)
            probes[name] = ProbeRate(
                hits=hits,
                scenarios=len(members),
                rate=round(rate, 3),
                chance=round(expected, 3),
                ratio=round(rate / expected, 2) if expected else 0.0,
                p_value=round(_tail(hits, len(members), GATE_FACTOR * expected), 5),
                base=round(base, 3),
                lift=round(rate / base, 2) if base else None,
                base_p_value=round(_tail(hits, len(members), GATE_FACTOR * base), 5),
            )
        rows.append(FamilyRates(family=family, scenarios=len(members), probes=probes))
    return rows


def failures(
    rows: Sequence[FamilyRates], probes: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """(family, probe) for every probe (of ``probes``; default all) that finds a family's bug
    far above chance, in families with at least ``GATE_MIN_SCENARIOS`` scenarios."""
    return [
        (row.family, name)
        for row in rows
        if row.family != "ALL" and row.scenarios >= GATE_MIN_SCENARIOS
        for name, rate in row.probes.items()
        if rate.far_above_chance and (probes is None or name in probes)
    ]
