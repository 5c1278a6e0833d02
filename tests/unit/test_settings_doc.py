"""docs/settings.md is what tools/settings_doc.py generates from the settings object, and no
``A01GYM_*`` variable is named anywhere (code, chart, Dockerfiles, docs) that it does not list."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import settings_doc  # noqa: E402

# Variables of the repo's own scripts and test harness, not of the a01gym package.
_HARNESS = re.compile(r"A01GYM_(E2E|KIND|ENVTEST|REQUIRE)_[A-Z_]*")
_NAME = re.compile(r"A01GYM_[A-Z0-9_]*[A-Z0-9]")


def test_the_settings_reference_is_generated_from_the_settings() -> None:
    assert (ROOT / "docs" / "settings.md").read_text() == settings_doc.render(), (
        "docs/settings.md drifted from a01gym.config: run .venv/bin/python tools/settings_doc.py"
    )


def test_the_reference_lists_nested_sections_and_other_variables() -> None:
    names = settings_doc.variables()
    assert {"A01GYM_GATEWAY__TOKEN", "A01GYM_SANDBOX__LIMITS__ADDRESS_SPACE_MB"} <= names
    assert {"A01GYM_CONFIG", "A01GYM_GATEWAY_URL"} <= names


def test_every_variable_named_in_the_code_chart_and_docs_is_in_the_reference() -> None:
    known = settings_doc.variables()
    places = [
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "charts").rglob("*.yaml"),
        *(ROOT / "charts").rglob("*.tpl"),
        *(ROOT / "docs").glob("*.md"),
        ROOT / "README.md",
        ROOT / "Dockerfile",
        ROOT / "sandbox-image" / "Dockerfile",
    ]
    unknown = set()
    for path in places:
        text = _HARNESS.sub("", path.read_text(encoding="utf-8"))
        for match in _NAME.finditer(text):
            name = match.group()
            rest = text[match.end() : match.end() + 2]
            if name not in known and not rest.startswith(("__", "%", "{")):  # templated names
                unknown.add(f"{name} ({path.relative_to(ROOT)})")
    assert not unknown, f"variables the settings do not define: {sorted(unknown)}"
