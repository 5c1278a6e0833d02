"""Giveaway probes: shortcut finders that point at the bug without reasoning about the policy.

A trained policy learns whatever finds the bug cheapest. If the code gives it away (the file
that differs from every other scenario's, a security helper nobody calls), the policy learns
that instead of access control. Each probe here sees only what an agent sees across many
episodes, the workspaces (the app and its TASK.md, never anything hidden), and names one
file per scenario (a :class:`Pointer`), and the probes that read code also the lines in it; a
*hit* is a file the reference fix changes, a *line hit* also lines it changes. The hit rate is
compared with chance, the hit rate of a file drawn at random from the app's Python files.

* ``nearest_diff``: the file that differs most from the most similar *other* scenario, with
  names, strings and numbers abstracted away (what an agent that remembers one episode's app
  can diff against). Files match by path, else by content (a layout,
  :mod:`a01gym.factory.layout`, may have renamed the module: a file of the same text is the
  same file, one under a new name is compared with the most similar file the nearest app has
  under a name this app lacks); its lines are the file's largest block of lines that differ
  from its counterpart's (lines the counterpart has and it lacks: the line where they would
  be). Files with nothing to compare with all score "all new" (no lines); the
  tie between them is drawn per scenario and file. It used to go to the order the app's files
  were written in, which an agent never sees and which put the bug's family first: a draw is
  what an agent that remembers one app can do, no less (it cannot tell two new files apart).
  Where several other apps are equally similar, each is compared and counts alike (an agent
  may remember any of them); the first in the population's order used to decide, and any
  change to a task text reordered a build's content hashes and moved its rate;
* ``unused_helper``: a file defining a function or setting no other line uses (a check the
  bug stopped calling; several such files: a draw), at the definition's line; it also hits
  where the fix starts using that name from another file (the helper was the bug's trace);
* ``sibling_asymmetry``: the file with a function that lacks a check-like call (a name with
  ``scope``, ``check``, ``require``, ``can_``, ``verify``, ...) that the largest share of its
  siblings make (the other route handlers of its module, or the other plain functions of its
  module or class): the list method that does not filter where the others do (a tie between
  files is drawn), at that function's lines;
* ``policy_keywords``: the file whose path shares the most words with the task's *last*
  policy line (the line a template would append for its bug);
* ``largest_file``: the longest Python file (a baseline any agent can run).

The rates against chance and the build's gate on them are in
:mod:`a01gym.factory.giveaway_gate`; ``tools/giveaway_probe.py`` prints them for a population of
compiled drafts (no sandbox needed: the code is fixed at compile time).
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
from typing import NamedTuple

from a01gym.scenario.bundle import Bundle

__all__ = [
    "LINE_PROBES",
    "PROBES",
    "Pointer",
    "candidates",
    "changed_regions",
    "line_span",
    "normalise",
    "python_files",
]


class Pointer(NamedTuple):
    """Where a probe points: a file, and the lines in it (1-based, inclusive) if it names any.

    ``tied`` holds where it would have pointed instead, equally sure: a probe names one of
    equally good files by a draw per scenario, and any change to an app's text re-draws it, so
    the report counts the share of them all (this one too) that the fix changes, the probe's
    expected hit (:func:`candidates`)."""

    path: str
    lines: tuple[int, int] | None = None
    tied: tuple[Pointer, ...] = ()
    name: str | None = None
    """The function or setting it points at, where it names one (``unused_helper``): a fix that
    starts using it found the bug through it, whichever file that fix changes."""


def candidates(pointer: Pointer) -> tuple[Pointer, ...]:
    """Every file a probe found equally good: the one it names first."""
    return (pointer._replace(tied=()), *pointer.tied)


def normalise(source: str) -> str:
    """``source`` with every name, string and number replaced by a placeholder, and comments
    dropped: two apps rendered from one template in different domains read the same. Line N
    of the result holds line N's tokens, so a line found here is that line of the source."""
    rows: list[list[str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
                text = "N"
            elif token.type == tokenize.STRING:
                text = "S"
            elif token.type == tokenize.NUMBER:
                text = "0"
            elif token.type in (
                tokenize.NEWLINE,
                tokenize.NL,
                tokenize.COMMENT,
                tokenize.INDENT,
                tokenize.DEDENT,
            ):
                continue  # a row's indentation is its first token's column
            else:
                text = token.string
            row, column = token.start[0] - 1, token.start[1]
            rows.extend([] for _ in range(row + 1 - len(rows)))
            rows[row].append(text if rows[row] else " " * column + text)
    except (tokenize.TokenError, IndentationError):
        return source
    return "\n".join(" ".join(row) for row in rows)


def python_files(bundle: Bundle) -> dict[str, str]:
    """The workspace's Python files (path -> text): what every probe reads."""
    return {
        path: content.decode(errors="replace")
        for path, content in bundle.workspace.items()
        if path.endswith(".py")
    }


def _nearest_diff(bundle: Bundle, population: Sequence[dict[str, str]], own: int) -> Pointer | None:
    mine = population[own]
    nearest: list[dict[str, str]] = []
    best_same = -1
    for index, other in enumerate(population):
        if index == own:
            continue
        # files match by content, not path: layouts rename modules, and an agent that
        # remembers one app recognises a file it has read under another name
        texts = set(other.values())
        same = sum(text in texts for text in mine.values())
        if same > best_same:
            nearest, best_same = [other], same
        elif same == best_same:
            nearest.append(other)
    # about half a build's apps have several equally near ones (2.3 on average, seed 28):
    # each is compared, and counts alike, rather than the first in some order the content
    # hashes decide (one such draw moved a 300-app build from 22.9 to 29.3 expected hits)
    found = [p for p in (_diff_against(bundle, mine, best) for best in nearest) if p is not None]
    if not found:
        return None
    # each app's candidates weigh 1 / (apps x its candidates): as whole copies, in fewest
    every = [candidates(p) for p in found]
    times = math.lcm(*map(len, every))
    weight: collections.Counter[Pointer] = collections.Counter()
    for group in every:
        weight.update({c: times // len(group) for c in group})
    unit = math.gcd(*weight.values())
    pooled = [c for c, n in weight.items() for _ in range(n // unit)]
    return pooled[0]._replace(tied=tuple(pooled[1:]))


def _diff_against(bundle: Bundle, mine: dict[str, str], best: dict[str, str]) -> Pointer | None:
    """Where ``mine`` differs most from ``best``: the file (and its lines) least like its
    counterpart there."""
    texts, own = set(best.values()), set(mine.values())
    counterparts = _paired(
        {path: text for path, text in mine.items() if path not in best and text not in texts},
        {path: text for path, text in best.items() if path not in mine and text not in own},
    )

    def counterpart(path: str) -> str | None:
        return best[path] if path in best else counterparts.get(path)

    changed = {
        path: 1.0 - difflib.SequenceMatcher(None, text, counterpart(path) or "").quick_ratio()
        for path, text in mine.items()
        if text not in texts
    }
    if not changed:
        return None
    # ties (files the nearest app lacks all score 1.0) go to a draw per scenario and file,
    # never to the order the app's files were written in
    top = max(changed.values())

    def pointer(path: str) -> Pointer:
        theirs = counterpart(path)
        return Pointer(path, None if theirs is None else _largest_change(theirs, mine[path]))

    return _drawn(bundle, {p: pointer(p) for p, score in changed.items() if score == top})


def _largest_change(before: str, after: str) -> tuple[int, int] | None:
    """``after``'s largest block of lines that differ from ``before``."""
    blocks = [
        (max(j2 - j1, 1), -j1, line_span(j1, j2)) for _, _, j1, j2 in changed_regions(before, after)
    ]
    return max(blocks)[2] if blocks else None


def changed_regions(before: str, after: str) -> list[tuple[int, int, int, int]]:
    """The line ranges ``(i1, i2, j1, j2)`` (0-based, end exclusive) where ``after`` differs
    from ``before``."""
    matcher = difflib.SequenceMatcher(None, before.split("\n"), after.split("\n"), autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def line_span(start: int, end: int) -> tuple[int, int]:
    """Lines ``[start, end)`` (0-based) as 1-based inclusive lines; an empty range (lines the
    other side has and this one lacks) as the line on each side of the gap. One convention for
    where a probe points and which lines a fix changes."""
    return (start + 1, end) if end > start else (max(start, 1), start + 1)


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


def _drawn(bundle: Bundle, equal: dict[str, Pointer]) -> Pointer:
    """One of equally good pointers (path -> pointer) by :func:`_draw`, the rest as its ``tied``."""
    path = max(equal, key=lambda p: _draw(bundle, p))
    return equal[path]._replace(tied=tuple(equal[p] for p in sorted(equal) if p != path))


_DEFINED = re.compile(r"^(?:def|async def)\s+(\w+)|^([A-Z][A-Z0-9_]+)\s*=", re.MULTILINE)


def _unused_helper(
    bundle: Bundle, population: Sequence[dict[str, str]], own: int
) -> Pointer | None:
    files = population[own]
    uses = collections.Counter(re.findall(r"\w+", "\n".join(files.values())))
    found: dict[str, tuple[int, str]] = {}
    for path, text in files.items():
        for match in _DEFINED.finditer(text):
            name = match.group(1) or match.group(2)
            if name.startswith("__"):
                continue
            if uses[name] == 1:
                # defined and never used: decorated routes are used by the framework
                before = text[: match.start()].rstrip().rsplit("\n", 1)[-1]
                if not before.startswith("@"):
                    found[path] = (text.count("\n", 0, match.start()) + 1, name)
                    break
    if not found:
        return None
    # several files with one: a draw, never the order of their names (a layout renames them)
    return _drawn(
        bundle,
        {path: Pointer(path, (line, line), name=name) for path, (line, name) in found.items()},
    )


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


def _asymmetry_scores(files: dict[str, str]) -> dict[str, tuple[float, tuple[int, int]]]:
    """Each file's asymmetry and the lines of its most asymmetric function (files with none
    left out): ``sibling_asymmetry`` names the highest."""
    # siblings: the route handlers (decorated) of one module or class, or its plain
    # functions; a function's asymmetry is the largest share of its siblings (at least two)
    # that use a check-like name it does not use; a file's is its most asymmetric function's
    scores: dict[str, tuple[float, tuple[int, int]]] = {}
    for path, text in files.items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for body in bodies:
            functions = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for decorated in (True, False):
                members = [f for f in functions if bool(f.decorator_list) == decorated]
                group = [_calls(f) for f in members]
                for index, mine in enumerate(group):
                    others = group[:index] + group[index + 1 :]
                    for name in set().union(*others) - mine if others else ():
                        having = sum(name in o for o in others)
                        share = having / len(others)
                        if having >= 2 and share > scores.get(path, (0.0,))[0]:
                            function = members[index]
                            span = (function.lineno, function.end_lineno or function.lineno)
                            scores[path] = (share, span)
    return scores


def _sibling_asymmetry(
    bundle: Bundle, population: Sequence[dict[str, str]], own: int
) -> Pointer | None:
    scores = _asymmetry_scores(population[own])
    if not scores:
        return None
    top = max(share for share, _ in scores.values())
    return _drawn(
        bundle, {p: Pointer(p, span) for p, (share, span) in scores.items() if share == top}
    )


_WORD = re.compile(r"[a-z]+")


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _policy_keywords(
    bundle: Bundle, population: Sequence[dict[str, str]], own: int
) -> Pointer | None:
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
    top = max(scores.values(), default=0)
    return _drawn(bundle, {p: Pointer(p) for p, n in scores.items() if n == top}) if top else None


def _largest_file(bundle: Bundle, population: Sequence[dict[str, str]], own: int) -> Pointer | None:
    files = population[own]
    return Pointer(max(files, key=lambda p: len(files[p]))) if files else None


Probe = Callable[[Bundle, Sequence[dict[str, str]], int], "Pointer | None"]

PROBES: dict[str, Probe] = {
    "nearest_diff": _nearest_diff,
    "unused_helper": _unused_helper,
    "sibling_asymmetry": _sibling_asymmetry,
    "policy_keywords": _policy_keywords,
    "largest_file": _largest_file,
}
"""Probe name -> where it points in one scenario of a population (None: no guess)."""

LINE_PROBES = frozenset({"nearest_diff", "unused_helper", "sibling_asymmetry"})
"""The probes that point at lines as well as a file (the others name a file only)."""
