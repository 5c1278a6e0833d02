"""How much a build's apps and fixes differ in structure, not just in names.

A policy trained on scenarios that share one file layout and one fix per family can learn
"this file, this patch" without understanding the access policy. Two figures say how far that
shortcut goes, for a set of bundles (a cache, or a build's output):

* **file layouts**: distinct sets of workspace paths;
* **reference-fix shapes**, per family: distinct fixes once identifiers, strings, numbers,
  comments, file names and whitespace are abstracted away, so that two fixes share a shape
  exactly when they make the same edit to code of the same form (``if x is None or not
  y.z(a, x):`` → ``if N is None or not N.N(N, N):``).

Also per family: the distinct sets of files the fix touches (by path), the plainest
"this file" shortcut, and how thick the hidden suite is (fewest and most exploits, fewest
guards): a suite of one or two exploits pays for a fix that blocks only the attack it names
(issue 28; ``exploits.EXPLOIT_FLOOR``). ``a01gym factory stats CACHE`` prints them.
"""

from __future__ import annotations

import collections
import difflib
import hashlib
import json
import keyword
import re
from collections.abc import Iterable

from pydantic import BaseModel, Field

from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import TestKind

__all__ = ["DiversityReport", "file_layout", "fix_shape", "measure"]

_TOKEN = re.compile(
    r"""(?P<string>[rbfuRBFU]{0,2}("[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\]*(?:\\.[^'\\]*)*'))"""
    r"|(?P<comment>\#.*$)"
    r"|(?P<number>\b\d[\d_]*(?:\.\d+)?\b)"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)"
)


def _abstract(line: str) -> str:
    """One line of code with names → ``N``, strings → ``S``, numbers → ``0``; keywords and
    punctuation kept, comments and whitespace dropped."""
    out = []
    for match in _TOKEN.finditer(line):
        kind, text = match.lastgroup, match.group()
        if kind == "string":
            out.append("S")
        elif kind == "number":
            out.append("0")
        elif kind == "name":
            out.append(text if keyword.iskeyword(text) or text == "None" else "N")
        elif kind == "other":
            out.append(text)
    return " ".join(out)


def file_layout(bundle: Bundle) -> tuple[str, ...]:
    """The sorted workspace paths."""
    return tuple(sorted(bundle.workspace))


def _file_shape(before: str, after: str) -> list[str]:
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        lines.append("@@" if line.startswith("@@") else f"{line[0]} {_abstract(line[1:])}")
    return lines


def fix_shape(bundle: Bundle) -> str:
    """A short digest of the reference fix's shape (see the module docstring)."""
    per_file = []
    for path, content in bundle.hidden.reference_fix.files.items():
        before = bundle.workspace.get(path, b"").decode(errors="replace")
        per_file.append(_file_shape(before, content or ""))
    canonical = json.dumps(sorted(per_file), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class FamilyDiversity(BaseModel):
    """One family's share of a build."""

    scenarios: int
    fix_shapes: int = Field(description="Distinct reference-fix shapes.")
    fix_file_sets: int = Field(description="Distinct sets of files the reference fix touches.")
    top_fix_files: list[str] = Field(description="The most common set of fixed files.")
    styles: int = Field(1, description="Distinct data-access styles (sqlite3, sqlalchemy).")
    exploits_min: int = Field(0, description="Fewest hidden exploit tests of a scenario.")
    exploits_max: int = Field(0, description="Most hidden exploit tests of a scenario.")
    guards_min: int = Field(0, description="Fewest hidden guard tests of a scenario.")


class DiversityReport(BaseModel):
    """Structural diversity of a set of bundles."""

    scenarios: int
    file_layouts: int = Field(description="Distinct sets of workspace paths.")
    fix_shapes_min: int = Field(description="Fewest fix shapes of any family.")
    styles: dict[str, int] = Field(
        default_factory=dict, description="Scenarios per data-access style."
    )
    families: dict[str, FamilyDiversity]


def _commonest(item: tuple[tuple[str, ...], int]) -> tuple[int, tuple[str, ...]]:
    """Most frequent first; ties by path, so the answer does not depend on the order."""
    return -item[1], item[0]


def measure(bundles: Iterable[Bundle]) -> DiversityReport:
    """Count layouts and fix shapes over ``bundles``."""
    layouts: set[tuple[str, ...]] = set()
    shapes: dict[str, set[str]] = collections.defaultdict(set)
    file_sets: dict[str, collections.Counter[tuple[str, ...]]] = collections.defaultdict(
        collections.Counter
    )
    counts: collections.Counter[str] = collections.Counter()
    styles: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    suites: dict[str, list[collections.Counter[TestKind]]] = collections.defaultdict(list)
    for bundle in bundles:
        family = bundle.hidden.labels.get("family", "?")
        counts[family] += 1
        styles[family][bundle.hidden.labels.get("data_access", "sqlite3")] += 1
        layouts.add(file_layout(bundle))
        shapes[family].add(fix_shape(bundle))
        file_sets[family][tuple(sorted(bundle.hidden.reference_fix.files))] += 1
        suites[family].append(collections.Counter(test.kind for test in bundle.hidden.tests))
    families = {
        family: FamilyDiversity(
            scenarios=counts[family],
            fix_shapes=len(shapes[family]),
            fix_file_sets=len(file_sets[family]),
            top_fix_files=list(min(file_sets[family].items(), key=_commonest)[0]),
            styles=len(styles[family]),
            exploits_min=min(suite[TestKind.EXPLOIT] for suite in suites[family]),
            exploits_max=max(suite[TestKind.EXPLOIT] for suite in suites[family]),
            guards_min=min(suite[TestKind.GUARD] for suite in suites[family]),
        )
        for family in sorted(counts)
    }
    return DiversityReport(
        scenarios=sum(counts.values()),
        file_layouts=len(layouts),
        fix_shapes_min=min((f.fix_shapes for f in families.values()), default=0),
        styles=dict(sorted(sum(styles.values(), collections.Counter()).items())),
        families=families,
    )
