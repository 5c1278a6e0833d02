"""The README and docs/ name only commands, files and modules that exist.

The README's command list is checked against the typer app itself (every command and every
command of every group), so a new command cannot ship undocumented; and every repository path,
``src/a01gym`` module path and ``a01gym.x.y`` name the documents mention must exist, so a
rename or a deleted module shows up here instead of in a reader's failed search.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import typer.main

from a01gym.cli.__main__ import app

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "a01gym"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_TOPS = "src|tests|bench|tools|docs|examples|charts|deploy|sandbox-image"
# A repository path with a file suffix (folders and generated outputs are left out).
_REPO_PATH = re.compile(rf"(?<![\w./-])((?:{_TOPS})/[\w./-]*\.(?:py|sh|md|ya?ml|json|toml))\b")
_PKG_NAMES = "|".join(sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").exists()))
# ``env/tools.py``: a module named by its path inside the package.
_PKG_PATH = re.compile(rf"(?<![\w./-])((?:{_PKG_NAMES})/[\w/]*\.py)\b")
# ``a01gym.training.trlkit`` or ``a01gym.config.Settings``; not ``a01gym.dev/v1alpha1``, an API
# group.
_DOTTED = re.compile(r"\ba01gym((?:\.[A-Za-z_]\w*)+)\b(?![/\w])")


def _commands() -> list[str]:
    """Every runnable command path of the ``a01gym`` app, e.g. ``factory build``."""
    found: list[str] = []

    def walk(command: object, prefix: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            if getattr(sub, "commands", None):
                walk(sub, f"{prefix}{name} ")
            else:
                found.append(f"{prefix}{name}")

    walk(typer.main.get_command(app), "")
    return sorted(found)


def _command_list() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- commands:begin -->\n(.*?)<!-- commands:end -->", text, re.DOTALL)
    assert block is not None, "README.md lost its command list"
    return block.group(1)


def test_the_readme_lists_every_command_and_sub_command() -> None:
    commands = _commands()
    assert {"serve", "eval", "factory build", "operator run", "sandbox check"} <= set(commands)
    listed = set(re.findall(r"^\| `a01gym ([a-z -]+)` \|", _command_list(), re.MULTILINE))
    assert not set(commands) - listed, f"add to README.md's command list: {set(commands) - listed}"
    assert not listed - set(commands), f"no such command: {listed - set(commands)}"


def _defines(module: Path, name: str) -> bool:
    """Whether ``module`` defines ``name`` at top level (a def, class or assignment)."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def _dotted_exists(parts: list[str]) -> bool:
    """``a01gym`` + ``parts`` is a module or package, or a name defined in one."""
    for cut in range(len(parts), 0, -1):
        base = PKG.joinpath(*parts[:cut])
        module = base.with_suffix(".py")
        if not module.is_file():
            module = base / "__init__.py"
        if module.is_file():
            rest = parts[cut:]
            return not rest or _defines(module, rest[0])
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_and_module_named_exists(doc: Path) -> None:
    text = doc.read_text()
    missing = [p for p in set(_REPO_PATH.findall(text)) if not (ROOT / p).exists()]
    missing += [p for p in set(_PKG_PATH.findall(text)) if not (PKG / p).is_file()]
    missing += [
        f"a01gym{d}" for d in set(_DOTTED.findall(text)) if not _dotted_exists(d.split(".")[1:])
    ]
    assert not missing, f"{doc.name} names what does not exist: {sorted(missing)}"


def test_the_checks_catch_a_stale_name() -> None:
    assert _REPO_PATH.findall("see `src/a01gym/sandbox/server.py`") == [
        "src/a01gym/sandbox/server.py"
    ]
    assert not (ROOT / "src/a01gym/sandbox/server.py").exists()
    assert _PKG_PATH.findall("(`factory/families/f11_redirect.py`)") == [
        "factory/families/f11_redirect.py"
    ]
    assert _dotted_exists(["training", "trlkit"]) and _dotted_exists(["config", "Settings"])
    assert not _dotted_exists(["sandbox", "server"])
    assert not _dotted_exists(["config", "NoSuchSetting"])
    assert _DOTTED.findall("`a01gym.dev/v1alpha1`") == []
