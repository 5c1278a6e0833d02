"""Status spellings: some functions refuse with ``HTTPException(403, ...)``, the others with
``HTTPException(status.HTTP_403_FORBIDDEN, ...)``.

Every generated refusal used to name its status by FastAPI's constant, so in a module whose
functions each check the caller (a service layer's ``x_for_read`` / ``x_for_update`` /
``x_for_delete``, a router's inline checks) the one function a bug left without its check was
the one that lacked ``HTTP_403_FORBIDDEN``, a name every sibling had: ``sibling_asymmetry``
(:mod:`a01gym.factory.giveaways`) reads names, and found the bug's file by it (over 8 builds
of 300 drafts, seeds 28-35, ``tools/giveaway_ties.py``: F02 at 2.8x chance, F01 at 2.4x; with
a share of 0.25, 0.5 or 0.75 of functions spelling the number, 2.4x and 2.0x;
``docs/results/giveaway-ties-statuses-2026-11-30.json``).

Real code mixes the two: FastAPI's tutorial writes ``status_code=404``, its reference the
constants, and a codebase grows both. Every draft's layout draws the share of functions that
spell the number (``Layout.status_numbers``; a spec built by hand may keep 0), and each
function is drawn by the spec's seed and its name (:func:`a01gym.factory.codetext.spelled`),
so a reference fix that adds a refusal to a function writes it the way that function does.
Only the status argument of ``HTTPException`` changes (a route's ``status_code=`` stays); a
module left without a use of ``status`` stops importing it. The rewrite reads the syntax tree
and edits lines; it never runs the code.
"""

from __future__ import annotations

import ast
import functools
import re

from a01gym.factory.codetext import spelled

__all__ = ["apply"]

_CONSTANT = re.compile(r"status\.HTTP_(\d{3})_[A-Z0-9_]+")
_USED = re.compile(r"(?<![\w.])status\.")
_IMPORT = re.compile(r"^(from fastapi import .*?)(?:, status\b|\bstatus, )(.*)$", re.MULTILINE)


def apply(seed: int, share: float, files: dict[str, str]) -> dict[str, str]:
    """``files`` with the chosen functions of the app's modules refusing by number."""
    if share <= 0:
        return files
    return {
        path: _numbered(seed, share, text) if _module(path) else text
        for path, text in files.items()
    }


def _module(path: str) -> bool:
    return path.startswith("app/") and path.endswith(".py")


@functools.lru_cache(maxsize=4096)
def _numbered(seed: int, share: float, text: str) -> str:
    """Memoised: a scenario renders its app 6-10 times, most modules alike in all of them."""
    if "HTTPException(" not in text:
        return text
    tree = ast.parse(text)
    owner: dict[int, str] = {}  # line -> the innermost function around it
    for node in ast.walk(tree):  # outer functions come first: inner ones overwrite
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            owner.update(dict.fromkeys(range(node.lineno, end + 1), node.name))
    lines = text.split("\n")
    changed = False
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "HTTPException"
            and node.args
        ):
            continue
        constant = _CONSTANT.fullmatch(ast.unparse(node.args[0]))
        name = owner.get(node.args[0].lineno)
        if constant is None or name is None or not spelled(seed, "status", share, name):
            continue
        row = node.args[0].lineno - 1
        lines[row] = lines[row].replace(constant[0], constant[1], 1)
        changed = True
    if not changed:
        return text
    out = "\n".join(lines)
    return out if _USED.search(out) else _IMPORT.sub(r"\1\2", out, count=1)
