"""docs/architecture.md names only modules, functions and tests that exist, so the map and the
traces stay true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()


def test_every_module_named_exists() -> None:
    names = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]*(?:\.py)?/?)`", DOC))
    modules = {n for n in names if not n.startswith(("tests/", "charts/"))}
    assert len(modules) > 20
    missing = [n for n in modules if not (ROOT / "src" / "a01gym" / n).exists()]
    assert not missing, missing


def test_every_test_named_exists() -> None:
    files = set(re.findall(r"(tests/[\w/]+\.py)", DOC))
    assert len(files) > 8
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, missing
    sources = "\n".join((ROOT / "tests").joinpath(*f.split("/")[1:]).read_text() for f in files)
    tests = set(re.findall(r"::(\w+)", DOC))
    assert len(tests) > 8
    assert not [t for t in tests if f"def {t}(" not in sources], tests


def _defined(path: Path, qualname: str) -> bool:
    """Whether ``path`` defines ``qualname``: a top-level function or class, or
    ``Class.method``."""
    scope: list[ast.stmt] = ast.parse(path.read_text()).body
    for part in qualname.split("."):
        found = [
            node
            for node in scope
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == part
        ]
        if not found:
            return False
        scope = found[0].body
    return True


def test_every_function_in_the_traces_exists() -> None:
    """The reset and submit traces name ``module.py:function`` (or ``Class.method``)."""
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py):([A-Za-z_][\w.]*)`", DOC))
    assert len(named) > 20
    missing = [
        f"{module}:{name}"
        for module, name in named
        if not (ROOT / "src" / "a01gym" / module).is_file()
        or not _defined(ROOT / "src" / "a01gym" / module, name)
    ]
    assert not missing, missing
    assert not _defined(ROOT / "src" / "a01gym" / "env" / "grading.py", "grade.nothing")
