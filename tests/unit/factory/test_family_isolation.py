"""A family is one module: outside ``factory/families/`` no code branches on a family id.

The shared skeleton (renderer, test generator, mutator, author, gates) asks a family what it
declares (``Family`` fields and hooks) instead of testing which family it is, so adding a
family never touches it. Two checks: no comparison with a family id anywhere outside the
family package, and family ids as values only in the few files that hold configuration data
(each allowed with its reason). Each check is run once on a snippet that breaks it, so it is
known to fail when it should.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "a01gym"
FAMILY_PACKAGE = SRC / "factory" / "families"

_ID = r"""["']F\d{2}["']"""
BRANCH = re.compile(
    rf"""[=!]=\s*{_ID}"""  # fam == "F07", fam != "F02"
    rf"""|{_ID}\s*[=!]="""  # "F07" == fam
    rf"""|{_ID}\s+(not\s+)?in\b"""  # "F03" in families
    rf"""|\bin\s*[(\[{{]\s*{_ID}"""  # fam in ("F03", "F04")
)
"""A comparison with a family id, in any of the forms the skeleton once used."""

DATA_ONLY = {
    "factory/config.py": "the default held-out families of the eval split (configuration)",
}
"""Files outside the family package that may name family ids as values, and why."""


def _outside_families() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if FAMILY_PACKAGE not in p.parents]


def _branches(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if BRANCH.search(line)]


def _family_ids(source: str) -> list[str]:
    """Family ids as whole string constants (docstrings and messages that mention one do not
    count: they decide nothing)."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"F\d{2}", node.value)
    ]


def test_nothing_outside_the_family_package_branches_on_a_family_id() -> None:
    found = {
        path.relative_to(SRC).as_posix(): hits
        for path in _outside_families()
        if (hits := _branches(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_family_ids_appear_as_values_only_in_configuration_data() -> None:
    found = {
        path.relative_to(SRC).as_posix()
        for path in _outside_families()
        if _family_ids(path.read_text(encoding="utf-8"))
    }
    assert found == set(DATA_ONLY)  # every allowed file still needs its allowance


def test_the_checks_catch_what_they_forbid() -> None:
    for branch in (
        'if self.fam == "F14":',
        "if fam != 'F02':",
        'if family_id in ("F03", "F04"):',
        'if "F03" in fams:',
        'no_auth = ("vuln",) if "F03" == fam else ()',
    ):
        assert _branches(branch) == [branch], branch
    assert _family_ids('HELD_OUT = ["F09"]') == ["F09"]
    assert _branches('"""F03 prints anonymously; fam == family"""') == []
    assert _family_ids('"""F03 prints anonymously."""') == []
