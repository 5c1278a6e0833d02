"""Agent-facing tracebacks: workspace frames only, relative paths, no host or sandbox paths."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from a01gym.sandbox.inside import tracebacks


def _load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_workspace_frames_remain_with_relative_paths(tmp_path: Path) -> None:
    workspace = tmp_path / "sbx-1" / "workspace"
    (workspace / "app").mkdir(parents=True)
    path = workspace / "app" / "routes.py"
    path.write_text(f"def handler():\n    open({str(tmp_path / 'sbx-1' / 'db')!r})\n")
    module = _load(path, "routes_under_test")
    try:
        importlib.import_module("json").loads(  # a harness frame around the app's own
            "1", object_hook=None, parse_int=lambda _: module.handler()
        )
    except OSError as exc:
        text = tracebacks.format_exception(exc, str(workspace))
    else:
        pytest.fail("the handler did not raise")
    assert 'File "app/routes.py", line 2, in handler' in text
    assert text.count('File "') == 1  # json's frames and this test's are gone
    assert str(tmp_path) not in text and sys.prefix not in text
    assert "<sandbox>/db" in text  # a path in the message names no host folder


def test_a_syntax_error_names_the_file_relative_to_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    path = tmp_path / "app" / "main.py"
    path.write_text("x = (\n")
    with pytest.raises(SyntaxError) as error:
        _load(path, "broken_under_test")
    text = tracebacks.format_exception(error.value, str(tmp_path))
    assert text.startswith('  File "app/main.py", line 1') and "never closed" in text
    assert str(tmp_path) not in text and "Traceback" not in text


def test_chained_exceptions_are_filtered_too(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    path = tmp_path / "app" / "db.py"
    path.write_text(
        "def get():\n    try:\n        {}['k']\n    except KeyError as e:\n"
        "        raise LookupError('no row') from e\n"
    )
    module = _load(path, "chained_under_test")
    with pytest.raises(LookupError) as error:
        module.get()
    text = tracebacks.format_exception(error.value, str(tmp_path))
    assert text.count('File "app/db.py"') == 2 and "KeyError" in text and "no row" in text
    assert __file__ not in text
