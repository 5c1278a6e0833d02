"""Dead helpers: the functions and settings that nothing in the app uses are left out.

The skeleton's security and policy modules offer every check any variant could use: the
``admin_only`` decorator, ``require_admin``, ``user_from_request`` for middleware, a scope per
action. Most apps use a few, so the rest used to sit there uncalled in every app, and a
shortcut finder that looks for an uncalled security helper (``factory/giveaways.py``,
``unused_helper``) pointed at the security module in nearly every app (in 105 of 105 drafts,
``python tools/giveaway_probe.py`` at the commit before this module). Worse, a bug that stops
calling the one check that used a helper left it uncalled in the vulnerable app alone.

:func:`prune` removes each rendering's unused top-level functions, settings
(``UPPER_CASE = ...``) and dependency aliases (``SignedIn = Annotated[...]``) from the app's
modules (not the routers, whose handlers the framework calls, nor ``main.py``), and then the
imports only they used, so neither the skeleton nor the bug leaves a dead helper: a check or
setting only the bug stopped using is not there either, and a fix that needs it writes it (the
reference fix restores it). It reads the code's syntax tree, never running it.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import re

from a01gym.factory.codetext import first_line

__all__ = ["prune"]

_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]+$")


def _pruned(path: str) -> bool:
    """Modules directly in ``app/`` but the entrypoint: the check, data and settings modules."""
    return (
        path.count("/") == 1
        and path.endswith(".py")
        and path not in ("app/main.py", "app/__init__.py")
    )


def prune(files: dict[str, str]) -> dict[str, str]:
    """``files`` without the unused top-level functions and settings of the app's modules,
    and the imports that only those used."""
    files = dict(files)
    names = {path: _Names.of(text) for path, text in files.items() if path.endswith(".py")}
    while True:
        uses: collections.Counter[str] = collections.Counter()
        for found in names.values():
            uses.update(found.counts)
        unused = {name for name, count in uses.items() if count == 1}
        changed = False
        for path in filter(_pruned, list(files)):
            if not unused & {a or b for a, b in _TOP.findall(files[path])}:
                continue
            text = _without(files[path], unused)
            # a module left with nothing but its docstring would be the giveaway itself (F11's
            # redirects.py was, when its broken apps stopped calling it): it keeps its helpers
            if text != files[path] and _defines(text):
                files[path], names[path], changed = text, _Names.of(text), True
        if not changed:
            break
    for path in filter(_pruned, list(files)):
        module = path.removeprefix("app/").removesuffix(".py")
        reached = {
            attr for found in names.values() for owner, attr in found.dotted if owner == module
        }
        files[path] = _unused_imports_dropped(files[path], names[path].counts, reached)
    return files


_TOP = re.compile(
    r"^(?:def|async def)\s+(\w+)|^([A-Z][A-Z0-9_]+|[A-Z]\w+(?= = Annotated\[))\s*=", re.MULTILINE
)


@dataclasses.dataclass(frozen=True)
class _Names:
    """A module's names, counted, and its ``name.attribute`` pairs."""

    counts: collections.Counter[str]
    dotted: frozenset[tuple[str, str]]

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def of(text: str) -> _Names:
        """Read from the syntax tree, not tokens: a name used only inside an f-string
        (``f"sqlite:///{config.DB_PATH}"``) is one token of a string before Python 3.12.
        Memoised: a scenario renders its app 6-10 times (fixed, vulnerable, each trap), and
        most modules are the same text in all of them."""
        counts: collections.Counter[str] = collections.Counter()
        dotted = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Name):
                counts[node.id] += 1
            elif isinstance(node, ast.Attribute):
                counts[node.attr] += 1
                if isinstance(node.value, ast.Name):
                    dotted.add((node.value.id, node.attr))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                counts[node.name] += 1
            elif isinstance(node, ast.alias):
                counts.update(node.name.split("."))
                if node.asname:
                    counts[node.asname] += 1
            elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
                counts[node.arg] += 1
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                counts.update(node.names)
        return _Names(counts, frozenset(dotted))


def _defines(text: str) -> bool:
    return any(
        not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr))
        for node in ast.parse(text).body
    )


def _without(text: str, unused: set[str]) -> str:
    """``text`` without its undecorated top-level functions and its settings named in
    ``unused``."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    spans = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            gone = (
                node.name in unused and not node.decorator_list and not node.name.startswith("__")
            )
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            gone = (
                isinstance(target, ast.Name)
                and target.id in unused
                and (bool(_CONSTANT.match(target.id)) or _annotated_alias(node.value))
            )
        else:
            gone = False
        if gone:
            spans.append((node.lineno, node.end_lineno or node.lineno))
    for first, last in sorted(spans, reverse=True):
        # with the blank lines before it, so two definitions stay two blank lines apart
        while first > 1 and not lines[first - 2].strip():
            first -= 1
        del lines[first - 1 : last]
    return "".join(lines)


def _annotated_alias(value: ast.expr) -> bool:
    """``Annotated[...]``: a dependency alias (:mod:`a01gym.factory.aliases`)."""
    return (
        isinstance(value, ast.Subscript)
        and isinstance(value.value, ast.Name)
        and value.value.id == "Annotated"
    )


def _unused_imports_dropped(text: str, counts: collections.Counter[str], reached: set[str]) -> str:
    """``text`` without imported names it no longer uses, unless another module reaches them
    through it (``security.Name``, in ``reached``)."""
    if all(counts[name.partition(".")[0]] > 1 or name in reached for name in _imported(text)):
        return text
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    changed = False
    for node in reversed(tree.body):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.ImportFrom) and node.module == "__future__"
        ):
            continue
        kept = [
            alias
            for alias in node.names
            if counts[(alias.asname or alias.name).partition(".")[0]] > 1
            or (alias.asname or alias.name) in reached
        ]
        if len(kept) == len(node.names):
            continue
        node.names, changed = kept, True
        lines[node.lineno - 1 : node.end_lineno or node.lineno] = (
            [ast.unparse(node) + "\n"] if kept else []
        )
    return _tidy("".join(lines)) if changed else text


@functools.lru_cache(maxsize=4096)
def _imported(text: str) -> tuple[str, ...]:
    """The names a module's top-level imports bind (``__future__`` aside)."""
    return tuple(
        alias.asname or alias.name
        for node in ast.parse(text).body
        if isinstance(node, ast.Import)
        or (isinstance(node, ast.ImportFrom) and node.module != "__future__")
        for alias in node.names
    )


def _tidy(text: str) -> str:
    """At most two blank lines anywhere and one between import groups: what is gone leaves no
    gap behind."""
    first = next(
        (n for n in ast.parse(text).body if not isinstance(n, (ast.Import, ast.ImportFrom))),
        None,
    )
    lines = text.splitlines(keepends=True)
    header_end = first_line(first) - 1 if first is not None else 0
    out: list[str] = []
    blank = 0
    for index, line in enumerate(lines):
        blank = blank + 1 if not line.strip() else 0
        if blank > 2 or (blank > 1 and index < header_end - 2):
            continue
        out.append(line)
    return "".join(out)
