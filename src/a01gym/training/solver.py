"""The scripted solver: the reference fix played as a short, plausible episode (eval, export).

Warm-start data for a small model has to look like something it could learn to do: look at the
failing test, reproduce the attack once, find the code with ``search`` (the enclosing
function's ``def``, so the file and line come from an observation the model sees), read the few
lines it will change, make small exact ``edit_file`` replacements, check, submit.
:class:`SolverAgent` plays exactly that from the scenario's stored reference fix, and
:func:`edit_hunks` turns a file's before/after text into the minimal replacements, each placed
by the ``line`` it starts on (the number ``read_file`` printed beside it).

Why by line and not by unique context: after SFT on uniquely-quoted edits, SmolLM2-135M wrote
the fix right on held-out F01 scenarios but quoted ``    if note is None:\n``, which three other
handlers of those files also hold (``edit_not_unique`` in 4 of 12 episodes, 2026-11-28): whether
a short quote is unique depends on parts of the file the model never read, so the data taught a
guess. The line number is on screen beside the text it quotes.

Like :class:`~a01gym.training.agents.ReferenceAgent` it reads the bundle's hidden part from the
scenario cache by the hash in the reset observation, so it is an eval baseline and a source of
SFT trajectories (``a01gym export-trajectories``), never a tool available to a model in training.
Nothing it sends carries hidden data beyond the fix itself: the attack it reproduces is copied
from the visible test run it has just seen.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from typing import Any

from a01gym.env.sampler import ScenarioSource

__all__ = ["Hunk", "SolverAgent", "edit_hunks"]

logger = logging.getLogger(__name__)

Action = dict[str, Any]
Observation = dict[str, Any]

_READ_MARGIN = 3  # lines shown around an edit, so the model has seen every line of ``old``
_READ_JOIN = 12  # windows closer than this are read as one


@dataclasses.dataclass(frozen=True)
class Hunk:
    """One ``edit_file`` replacement, the original lines (1-based, inclusive) it covers, the
    line ``old`` starts on when it is sent (after the hunks before it), and whether it removes
    a name the file defines or imports."""

    old: str
    new: str
    first_line: int
    last_line: int
    line: int
    unbinds: bool = False


def _groups(a: list[str], b: list[str], gap: int) -> list[tuple[int, int, int, int]]:
    """Changed regions ``(i1, i2, j1, j2)``, merging regions at most ``gap`` equal lines apart."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    regions: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if regions and i1 - regions[-1][1] <= gap:
            regions[-1] = (regions[-1][0], i2, regions[-1][2], j2)
        else:
            regions.append((i1, i2, j1, j2))
    return regions


def edit_hunks(original: str, target: str, *, gap: int = 2) -> list[Hunk]:
    """The ``edit_file`` replacements that turn ``original`` into ``target``, in order.

    Each hunk's ``old`` is the changed lines (a pure insertion takes the nearest non-blank
    line above, else below, as its anchor), and ``line`` where it starts in the file as it is
    after the hunks before it, so an ``old`` that occurs more than once is still one edit.
    Hunks go top to bottom, except that removing imported names comes after the edits that
    stop using them.

    Args:
        original: The file as the workspace has it.
        target: The file as the fix has it.
        gap: Changed regions at most this many unchanged lines apart become one edit, so the app
            is not restarted half-fixed between two close changes.

    Raises:
        ValueError: if a change has no non-blank line to quote (a file of blank lines), or the
            edits do not reproduce ``target``; checked so a bad hunk cannot reach an episode.
    """
    current = original.splitlines(keepends=True)
    want = target.splitlines(keepends=True)
    regions = _groups(current, want, gap)
    # Removing a name before the code that uses it would leave the app unable to start between
    # two edits, so edits that unbind names go last, bottom up (uses usually sit below).
    unbinding = {r: _unbinds(current[r[0] : r[1]], want[r[2] : r[3]]) for r in regions}
    regions.sort(key=lambda r: (True, -r[0]) if unbinding[r] else (False, r[0]))
    hunks: list[Hunk] = []
    applied: list[tuple[int, int]] = []  # (original line, lines added) of the edits so far
    for i1, i2, j1, j2 in regions:
        shift = sum(added for line, added in applied if line < i1)
        start, end = i1 + shift, i2 + shift
        before, after = _context(current, start, end)
        old = "".join(current[start - before : end + after])
        new = "".join(current[start - before : start] + want[j1:j2] + current[end : end + after])
        first = i1 - before + 1
        last = max(i2 + after, first)
        line = start - before + 1
        hunks.append(Hunk(old, new, first, last, line, unbinds=unbinding[(i1, i2, j1, j2)]))
        current[start:end] = want[j1:j2]
        applied.append((i1, (j2 - j1) - (i2 - i1)))
    if "".join(current) != target:
        raise ValueError("the edits do not reproduce the target file")
    return hunks


_IMPORT = re.compile(r"^\s*(?:from\s+\S+\s+)?import\s+(.*)$")
_BINDING = re.compile(r"^\s*(?:(?:async\s+)?def\s+(\w+)|class\s+(\w+)|(\w+)\s*(?::[^=]*)?=(?!=))")


def _unbinds(old: list[str], new: list[str]) -> bool:
    """Whether replacing ``old`` lines with ``new`` removes a name they define or import."""
    bound: set[str] = set()
    for line in old:
        if found := _IMPORT.match(line):
            bound |= set(re.findall(r"\w+", found.group(1))) - {"as"}
        elif found := _BINDING.match(line):
            bound |= {name for name in found.groups() if name}
    return bool(bound - set(re.findall(r"\w+", "".join(new))))


def _context(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Context lines (above, below) to quote with ``lines[start:end]``: none when they hold
    text, else the fewest (preferring above) that give ``old`` a non-blank line."""
    for total in range(len(lines) + 1):
        for above in range(min(total, start), -1, -1):
            below = total - above
            if end + below <= len(lines) and "".join(lines[start - above : end + below]).strip():
                return above, below
    raise ValueError("no non-blank line to quote for an edit")


def _windows(hunks: list[Hunk]) -> list[tuple[int, int]]:
    """Line ranges to read before editing: each hunk with a margin, close ones joined."""
    windows: list[tuple[int, int]] = []
    for hunk in sorted(hunks, key=lambda h: h.first_line):
        first = max(1, hunk.first_line - _READ_MARGIN)
        last = hunk.last_line + _READ_MARGIN
        if windows and first - windows[-1][1] <= _READ_JOIN:
            windows[-1] = (windows[-1][0], max(last, windows[-1][1]))
        else:
            windows.append((first, last))
    return windows


_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(")


def _locator(original: str, hunk: Hunk) -> str | None:
    """What to ``search`` for to find a hunk: its enclosing function's ``def name(``, else its
    first non-blank line. The search result names the file and line, so the model's choice of
    file to read and edit follows from an observation it has seen, not from memory."""
    lines = original.splitlines()
    for index in range(min(hunk.first_line, len(lines)) - 1, -1, -1):
        found = _DEF.match(lines[index])
        if found:
            return f"def {found.group(1)}("
    first = next((line.strip() for line in hunk.old.splitlines() if line.strip()), "")
    return first or None


def _reproduction(observation: Observation) -> Action | None:
    """The first GET of the first visible exploit that worked, replayed as an http_request.

    Only GETs are replayed: the evidence does not record request bodies, and a GET leaves the
    agent's world as it was.
    """
    for test in (observation.get("result") or {}).get("tests") or []:
        if test.get("kind") != "exploit" or test.get("outcome") != "pass":
            continue
        for step in test.get("evidence") or []:
            if step.get("method") == "GET" and str(step.get("path", "")).startswith("/"):
                return {
                    "tool": "http_request",
                    "method": "GET",
                    "path": step["path"],
                    "actor": step.get("actor") or "anonymous",
                }
    return None


class SolverAgent:
    """Explores briefly, applies the reference fix as minimal edits, tests, submits (eval only)."""

    name = "solver"

    def __init__(self, source: ScenarioSource) -> None:
        self.source = source
        self._explore: list[Action] = []
        self._fix: list[Action] = []
        self._reproduce_next = False

    async def start(self, observation: Observation) -> None:
        result = observation.get("result") or {}
        bundle = self.source.load(str(result.get("scenario")))
        budget = int((result.get("budget") or {}).get("max_steps") or 40)
        for gap in (2, 8, 32, 10**9):  # fewer, larger edits when the budget is tight
            reads, edits = self._plan(bundle, gap)
            if len(edits) + 2 <= budget:
                break
        self._fix = [*edits, {"tool": "run_tests"}, {"tool": "submit"}]
        # Exploration is optional: run the visible tests, reproduce one attack, read the lines.
        spare = budget - len(self._fix)
        self._explore = [{"tool": "run_tests"}, *reads][: max(0, spare - 1)]
        self._reproduce_next = bool(self._explore) and spare > len(self._explore)

    @staticmethod
    def _plan(bundle: Any, gap: int) -> tuple[list[Action], list[Action]]:
        reads: list[Action] = []
        edits: list[Action] = []
        changes: list[tuple[str, list[Hunk]]] = []
        for path, content in sorted(bundle.hidden.reference_fix.files.items()):
            if content is None:
                logger.warning("solver: the fix deletes %s, which no tool can do; skipped", path)
                continue
            if path not in bundle.workspace:
                edits.append({"tool": "write_file", "path": path, "content": content})
                continue
            changes.append((path, edit_hunks(bundle.workspace[path].decode(), content, gap=gap)))
        # A file that drops a name is edited after the files that stop using it.
        changes.sort(key=lambda change: (any(h.unbinds for h in change[1]), change[0]))
        for path, hunks in changes:
            pattern = _locator(bundle.workspace[path].decode(), hunks[0])
            if pattern:
                reads.append({"tool": "search", "pattern": pattern})
            reads += [
                {"tool": "read_file", "path": path, "start_line": first, "end_line": last}
                for first, last in _windows(hunks)
            ]
            edits += [
                {"tool": "edit_file", "path": path, "old": h.old, "new": h.new, "line": h.line}
                for h in hunks
            ]
        return reads, edits

    async def act(self, observation: Observation) -> Action:
        if observation.get("tool") == "run_tests" and self._reproduce_next:
            self._reproduce_next = False
            reproduce = _reproduction(observation)
            if reproduce is not None:
                return reproduce
        if observation.get("tool") in ("edit_file", "write_file") and observation.get("error"):
            logger.warning("solver: %s failed: %s", observation["tool"], observation["error"])
        if self._explore:
            return self._explore.pop(0)
        return self._fix.pop(0) if self._fix else {"tool": "submit"}
