"""docs/architecture.md names only modules and tests that exist, so the map stays true."""

from __future__ import annotations

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
