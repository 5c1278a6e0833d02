"""Source-text helpers for the app generator: dedent + ``$name`` substitution, indentation.

``string.Template`` is used because generated Python is full of braces and rarely uses ``$``.
"""

from __future__ import annotations

import ast
import string
import textwrap

__all__ = ["block", "first_line", "indent"]


def block(template: str, **values: object) -> str:
    """Dedent ``template``, strip surrounding blank lines and substitute ``$name`` values."""
    return string.Template(textwrap.dedent(template).strip("\n")).substitute(values)


def indent(text: str, spaces: int) -> str:
    """Indent every non-empty line of ``text`` by ``spaces``."""
    return textwrap.indent(text, " " * spaces)


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on, its decorators included (``lineno`` is the ``def``)."""
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])
