"""Source-text helpers for the app generator: dedent + ``$name`` substitution, indentation,
the per-function spelling draw, and the final tidy of a generated module's blank lines.

``string.Template`` is used because generated Python is full of braces and rarely uses ``$``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import re
import string
import textwrap
import tokenize

__all__ = ["block", "first_line", "indent", "spelled", "tidy"]


def block(template: str, **values: object) -> str:
    """Dedent ``template``, strip surrounding blank lines and substitute ``$name`` values."""
    return string.Template(textwrap.dedent(template).strip("\n")).substitute(values)


def indent(text: str, spaces: int) -> str:
    """Indent every non-empty line of ``text`` by ``spaces``."""
    return textwrap.indent(text, " " * spaces)


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on, its decorators included (``lineno`` is the ``def``)."""
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])


def spelled(seed: int, kind: str, share: float, function: str) -> bool:
    """Whether ``function`` (a name) of the spec drafted from ``seed`` takes the ``kind`` of
    spelling that ``share`` of an app's functions take (dependency aliases, status numbers).

    Drawn by name, never by mode: the vulnerable app, the reference fix and every trap spell a
    function alike, so a fix is written the way the function around it is."""
    digest = hashlib.sha256(f"{seed}\x00{kind}\x00{function}".encode()).digest()
    return int.from_bytes(digest[:8]) / 2**64 < share


_LOOSE = re.compile(r"\n\n\n+[ \t]|\n\n\n\n")


@functools.lru_cache(maxsize=4096)
def tidy(text: str) -> str:
    """``text`` with trailing spaces gone and blank-line runs as a formatter leaves them: at
    most one before an indented line, two before a top-level one.

    Templates leave a run where an optional block renders empty, and where a mode drops a
    check: two blank lines in a class where the secure app had a method told an agent where the
    bug was (issue 28). Lines inside a multi-line string are kept as written. Memoised: a
    scenario renders its app 6-10 times and most modules are the same text in all of them."""
    lines = [line.rstrip() for line in text.rstrip().splitlines()]
    tidied = "\n".join(lines) + "\n"
    if not _LOOSE.search(tidied):
        return tidied
    inside: set[int] = set()  # 1-based rows that continue a multi-line string
    for token in tokenize.generate_tokens(io.StringIO(tidied).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            inside.update(range(token.start[0] + 1, token.end[0] + 1))
    out: list[str] = []
    blank = 0
    for row, line in enumerate(lines, start=1):
        if not line and row not in inside:
            blank += 1
            continue
        if blank:
            keep = blank if row in inside else min(blank, 1 if line[:1] in " \t" else 2)
            out += [""] * keep
            blank = 0
        out.append(line)
    return "\n".join(out) + "\n"
