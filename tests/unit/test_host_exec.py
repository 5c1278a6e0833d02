"""Nothing agent-written or generated is executed in a host process: no ``exec``, ``eval``,
``compile``, ``__import__`` or ``runpy`` anywhere in the package, and a module is imported by
name only where the sandbox does it, inside the sandbox (the app process imports the
workspace's entrypoint after isolation is applied, through the compiled-module cache of
``sandbox/inside/bytecode.py``; the zygote preloads a fixed list, and on demand the fixed optional
list of ``sandbox/inside/preloads.py``, whatever names it is sent). Loading code objects
(``marshal``, ``source_to_code``) is allowed only in that cache.

The containment tests (test_sandbox_containment.py, test_sandbox_bwrap.py) check the other
half: what runs inside a sandbox cannot reach the host.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "a01gym"
_BANNED_CALLS = {"exec", "eval", "compile", "__import__"}
_BANNED_MODULES = {"runpy", "code", "codeop", "marshal"}
_IMPORT_BY_NAME_ALLOWED = {
    "sandbox/inside/app_process.py",
    "sandbox/inside/zygote.py",
    "sandbox/inside/preloads.py",
    "sandbox/inside/bytecode.py",
}
_CODE_LOADING_ALLOWED = {"sandbox/inside/bytecode.py"}


def _offences(path: Path, root: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _BANNED_CALLS:
                found.append(f"{where}:{node.lineno} {func.id}()")
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("import_module", "exec_module", "spec_from_file_location")
                and where not in _IMPORT_BY_NAME_ALLOWED
            ):
                found.append(f"{where}:{node.lineno} {func.attr}()")
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "source_to_code"
                and where not in _CODE_LOADING_ALLOWED
            ):
                found.append(f"{where}:{node.lineno} {func.attr}()")
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            banned = _BANNED_MODULES - ({"marshal"} if where in _CODE_LOADING_ALLOWED else set())
            found += [f"{where}:{node.lineno} import {n}" for n in names if n in banned]
    return found


def test_no_module_executes_code_it_did_not_ship_with() -> None:
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 100
    offences = [line for path in modules for line in _offences(path)]
    assert not offences, offences


def test_the_guard_catches_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "gateway" / "bad.py"
    bad.parent.mkdir()
    bad.write_text(
        "import importlib, runpy, marshal\n"
        "exec(open('w.py').read())\n"
        "importlib.import_module('workspace.main')\n"
        "loader.source_to_code(b'', 'w.py')\n"
    )
    assert len(_offences(bad, tmp_path)) == 5
