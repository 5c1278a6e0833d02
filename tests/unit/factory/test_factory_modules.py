"""Every factory module documents its role, declares its public names, respects the layers."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import a01gym.factory

MODULES = [
    *sorted(m.name for m in pkgutil.walk_packages(a01gym.factory.__path__, "a01gym.factory.")),
    "a01gym.cli.factory",
]
HIGHER = ("a01gym.env", "a01gym.gateway", "a01gym.operator", "a01gym.training", "a01gym.cli")


@pytest.mark.parametrize("name", MODULES)
def test_module_has_docstring_and_all(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__ and len(module.__doc__.strip()) > 40
    for public in module.__all__:
        assert hasattr(module, public), f"{name}.{public} is in __all__ but missing"


@pytest.mark.parametrize("name", [m for m in MODULES if m.startswith("a01gym.factory.")])
def test_factory_imports_only_its_layer_or_lower(name: str) -> None:
    source = Path(importlib.import_module(name).__file__ or "").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert not {m for m in imported if m.startswith(HIGHER)}, name
