"""The skeleton's layout: what its shared modules are called and which of them share a file.

Every app used to ship one file set (``app/security.py``, ``app/policy.py``,
``app/repository.py``, ``app/storage.py``, ``app/routers/*.py``): after one episode an agent
knows where each concern lives, and a path it remembers from the last task of a family is
where the next one's bug is (issue 28, item 3). A :class:`~a01gym.factory.layoutspec.Layout`
names the security, policy, repository and API token modules, the routers package and each
router module from common spellings (:data:`~a01gym.factory.layoutspec.AREA_NAMES`), and may
merge file storage into the repository, as many real apps do.
:func:`a01gym.factory.layoutdraw.draw` picks one per seed; the renderer writes the default
layout and :func:`apply` rewrites the finished files to the spec's.

The rewrite works on tokens and the syntax tree, never by running the code: import statements
of ``app`` modules are rewritten whole, ``module.name`` references by token. A file that uses a
module's name other than as that module (a local variable, a keyword argument) cannot be
renamed safely, and :class:`LayoutError` names the file and line instead of writing a broken
app. Docstrings that name a renamed module's function (``security.require_admin``) follow it.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import sys
import tokenize

from a01gym.factory.codetext import first_line
from a01gym.factory.layoutspec import Layout

__all__ = ["LayoutError", "apply", "canonical", "merge"]

_RENAMED = ("security", "policy", "repository", "tokens")
_PACKAGE = "routers"


class LayoutError(ValueError):
    """The rendered app cannot be rewritten to the layout (the message names file and line)."""


def apply(layout: Layout, files: dict[str, str]) -> dict[str, str]:
    """``files`` (path -> source) rewritten to ``layout``.

    Raises:
        LayoutError: a module name is used other than as that module somewhere.
    """
    if layout.skeleton_names:
        return files
    files = dict(files)
    if layout.storage_in_repository:
        files = merge(files, "storage", "repository")
    names: dict[str, str | None] = {
        old: getattr(layout, old) for old in _RENAMED if getattr(layout, old) != old
    }
    package = layout.routers
    if not names and package == _PACKAGE and not layout.areas:
        return files
    out = {}
    key = tuple(sorted(names.items(), key=str))
    areas = tuple(layout.areas.items())
    for path, text in files.items():
        if path.endswith(".py"):
            text = _rewritten(path, text, key, package, areas)
        out[_moved(path, names, package, layout.areas)] = text
    return out


@functools.lru_cache(maxsize=4096)
def _rewritten(
    path: str,
    text: str,
    names: tuple[tuple[str, str | None], ...],
    package: str,
    areas: tuple[tuple[str, str], ...] = (),
) -> str:
    """:func:`_rewrite`, memoised: a scenario renders its app 6-10 times (fixed, vulnerable,
    each trap), and most modules are the same text in all of them."""
    return _rewrite(path, text, dict(names), package, dict(areas))


def canonical(layout: Layout, path: str) -> str:
    """The path in the skeleton's own layout of the file at ``path`` in ``layout`` (a merged
    module's file is its host's): what compares one app's files with another's."""
    if path.startswith(f"app/{layout.routers}/"):
        module = path.removeprefix(f"app/{layout.routers}/").removesuffix(".py")
        old = {new: old for old, new in layout.areas.items()}.get(module)
        return f"app/{_PACKAGE}/" + (
            f"{old}.py" if old else path.removeprefix(f"app/{layout.routers}/")
        )
    for old in _RENAMED:
        if path == f"app/{getattr(layout, old)}.py":
            return f"app/{old}.py"
    return path


def _moved(path: str, names: dict[str, str | None], package: str, areas: dict[str, str]) -> str:
    if path.startswith(f"app/{_PACKAGE}/"):
        module = path.removeprefix(f"app/{_PACKAGE}/")
        new = areas.get(module.removesuffix(".py"))
        return f"app/{package}/" + (f"{new}.py" if new else module)
    stem = path.removeprefix("app/").removesuffix(".py")
    new = names.get(stem)
    return f"app/{new}.py" if path == f"app/{stem}.py" and new else path


def _rewrite(
    path: str,
    text: str,
    names: dict[str, str | None],
    package: str = _PACKAGE,
    areas: dict[str, str] | None = None,
) -> str:
    """``text`` with the ``app`` modules in ``names`` renamed (to ``None``: merged into this
    very module, whose imports go and whose ``module.`` prefixes are dropped), ``app.routers``
    moved to ``app.<package>``, and the router modules in ``areas`` renamed."""
    moved = [*names, *([_PACKAGE] if package != _PACKAGE or areas else [])]
    if not moved or not re.search(r"\b(?:" + "|".join(map(re.escape, moved)) + r")\b", text):
        return text  # names none of them: most files; tokenizing every file was half the cost
    areas = areas or {}
    tree = ast.parse(text)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(row: int, col: int) -> int:
        return starts[row - 1] + col

    edits: list[tuple[int, int, str]] = []
    imported: set[str] = set()
    modules: set[str] = set()  # what this file imports from app: a merge may rename onto one
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "app":
                modules.update(alias.asname or alias.name for alias in node.names)
            new = _import(node, names, package, areas, imported)
            if new is None:
                continue
            start, end = (
                offset(node.lineno, node.col_offset),
                offset(node.end_lineno or node.lineno, node.end_col_offset or 0),
            )
            if not new:  # the whole line goes
                start, end = starts[node.lineno - 1], starts[node.end_lineno or node.lineno]
            edits.append((start, end, new))
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    renames = {**names, **{old: areas[old] for old in imported & areas.keys()}}
    taken = {
        t.string
        for i, t in enumerate(tokens)
        if t.type == tokenize.NAME and tokens[i - 1].string != "."
    }
    for old in sorted(imported):
        if renames[old] in taken - modules:
            kind = "router module" if old in areas else "module"
            raise LayoutError(
                f"{path}: {kind} {old!r} cannot become {renames[old]!r}, a name this file "
                "already uses; rename that name in the template"
            )
    dotted = (
        re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\.(?=[a-z_])") if names else None
    )
    for index, token in enumerate(tokens):
        at = offset(*token.start)
        if any(start <= at < end for start, end, _ in edits):
            continue
        if token.type == tokenize.STRING and dotted is not None:
            renamed = dotted.sub(
                lambda m: f"{names[m.group(1)]}." if names[m.group(1)] else "", token.string
            )
            if renamed != token.string:
                edits.append((at, offset(*token.end), renamed))
        if token.type != tokenize.NAME or token.string not in imported:
            continue
        before = tokens[index - 1].string if index else ""
        after = tokens[index + 1].string if index + 1 < len(tokens) else ""
        if before == ".":
            continue
        if after != ".":
            raise LayoutError(
                f"{path}:{token.start[0]}: {token.string!r} is used other than as the module "
                "app." + token.string + "; rename that name in the template"
            )
        new_name = renames[token.string]
        if new_name is None:
            edits.append((at, offset(*tokens[index + 1].end), ""))
        else:
            edits.append((at, offset(*token.end), new_name))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _import(
    node: ast.ImportFrom,
    names: dict[str, str | None],
    package: str,
    areas: dict[str, str],
    imported: set[str],
) -> str | None:
    """The rewritten import statement (``""``: none left), or None to keep it."""
    assert node.module is not None
    if node.module == "app":
        if not any(alias.name in names for alias in node.names):
            return None
        kept: dict[str, ast.alias] = {}
        for alias in node.names:
            if alias.name in names:
                imported.add(alias.name)
                new = names[alias.name]
                if new is None:
                    continue
                alias = ast.alias(new, alias.asname)
            kept.setdefault(alias.name, alias)
        aliases = sorted(kept.values(), key=lambda a: a.name)
        return ast.unparse(ast.ImportFrom("app", aliases, 0)) if aliases else ""
    top, _, tail = node.module.partition(".")
    head, _, rest = tail.partition(".")
    if top == "app" and head == _PACKAGE and not rest:  # from app.routers import users, ...
        renamed = [alias for alias in node.names if alias.name in areas]
        if not renamed and package == _PACKAGE:
            return None
        imported.update(alias.name for alias in renamed if not alias.asname)
        aliases = [ast.alias(areas.get(a.name, a.name), a.asname) for a in node.names]
        aliases.sort(key=lambda a: a.name)
        return ast.unparse(ast.ImportFrom(f"app.{package}", aliases, 0))
    if top == "app" and head == _PACKAGE:  # from app.routers.users import ...
        module, _, inner = rest.partition(".")
        rest = ".".join(filter(None, (areas.get(module, module), inner)))
        if rest == node.module.removeprefix(f"app.{_PACKAGE}.") and package == _PACKAGE:
            return None
        module = ".".join(("app", package, rest))
    elif head in names:
        if names[head] is None:
            return ""
        module = ".".join(filter(None, ("app", names[head], rest)))
    else:
        return None
    return ast.unparse(ast.ImportFrom(module, node.names, 0))


def merge(files: dict[str, str], src: str, dst: str) -> dict[str, str]:
    """``app/<src>.py`` appended to ``app/<dst>.py``, every import of it redirected."""
    source, target = f"app/{src}.py", f"app/{dst}.py"
    out = {
        path: _rewritten(path, text, ((src, dst),), _PACKAGE) if path.endswith(".py") else text
        for path, text in files.items()
        if path not in (source, target)
    }
    parts = [
        _split(path, _rewritten(path, files[path], ((dst, None), (src, None)), _PACKAGE))
        for path in (target, source)
    ]
    (doc, imports, body), (src_doc, src_imports, src_body) = parts
    clash = _defined(body) & (
        _defined(src_body) | {a.asname or a.name for n in src_imports for a in n.names}
    )
    if clash:
        raise LayoutError(f"{source} and {target} both define {sorted(clash)}")
    header = "\n".join(f"# {line}".rstrip() for line in src_doc.strip().splitlines())
    out[target] = (
        (f'"""{doc}"""\n\n' if doc else "")
        + _imports([*imports, *src_imports])
        + "\n\n\n"
        + body.strip()
        + "\n\n\n"
        + (header + "\n\n" if header else "")
        + src_body.strip()
        + "\n"
    )
    return out


def _split(path: str, text: str) -> tuple[str, list[ast.stmt], str]:
    """A module's docstring, leading imports and the rest of its text."""
    tree = ast.parse(text)
    statements = list(tree.body)
    doc = ast.get_docstring(tree, clean=False) or ""
    if doc:
        statements.pop(0)
    imports: list[ast.stmt] = []
    while statements and isinstance(statements[0], (ast.Import, ast.ImportFrom)):
        imports.append(statements.pop(0))
    if not statements:
        return doc, imports, ""
    first = statements[0]
    return doc, imports, "".join(text.splitlines(keepends=True)[first_line(first) - 1 :])


def _defined(body: str) -> set[str]:
    names = set()
    for node in ast.parse(body).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _imports(statements: list[ast.stmt]) -> str:
    """One import block from two modules' imports: each module's names merged, grouped as
    ruff's isort groups them (future, standard library, third party, the app)."""
    groups: dict[int, dict[str, set[tuple[str, str | None]] | None]] = {0: {}, 1: {}, 2: {}, 3: {}}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                groups[_group(alias.name)].setdefault(f"import {ast.unparse(alias)}", None)
        elif isinstance(node, ast.ImportFrom) and node.module:
            merged = groups[_group(node.module)].setdefault(node.module, set())
            assert merged is not None
            merged |= {(a.name, a.asname) for a in node.names}
    blocks = []
    for group in groups.values():
        lines = []
        for module, aliases in group.items():
            if aliases is None:
                lines.append(module)
            else:
                ordered = [ast.alias(n, a) for n, a in sorted(aliases)]
                lines.append(ast.unparse(ast.ImportFrom(module, ordered, 0)))
        if lines:
            blocks.append("\n".join(sorted(lines, key=lambda s: (s.startswith("from "), s))))
    return "\n\n".join(blocks)


def _group(module: str) -> int:
    top = module.partition(".")[0]
    if top == "__future__":
        return 0
    if top == "app":
        return 3
    return 1 if top in sys.stdlib_module_names else 2
