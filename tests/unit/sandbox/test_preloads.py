"""What the supervisor asks the zygote to preload, read from an agent-writable workspace."""

from __future__ import annotations

import sys
from pathlib import Path

from a01gym.sandbox.inside import preloads


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_an_orm_workspace_wants_sqlalchemy(tmp_path):
    workspace = _workspace(
        tmp_path,
        {
            "app/main.py": "from fastapi import FastAPI\n",
            "app/db.py": "import os\nfrom sqlalchemy.orm import Session\n",
        },
    )
    assert preloads.wanted_by(workspace) == ["sqlalchemy"]


def test_mentions_that_are_not_imports_want_nothing(tmp_path):
    workspace = _workspace(
        tmp_path,
        {
            "app/main.py": "# we used to import sqlalchemy here\nNAME = 'sqlalchemy'\n",
            "README.md": "import sqlalchemy\n",  # not Python
            "app/sqlalchemy_notes.py": "import sqlalchemy_utils\n",  # another package
        },
    )
    assert preloads.wanted_by(workspace) == []


def test_the_scan_is_bounded(tmp_path):
    files = {f"app/m{i:03}.py": "x = 1\n" for i in range(preloads._MAX_FILES + 5)}
    files["app/late/db.py"] = "import sqlalchemy\n"  # walked after every file of app/
    assert preloads.wanted_by(_workspace(tmp_path, files)) == []


def test_the_preloader_imports_known_names_once_and_marks_older_forks_stale():
    prepared = []
    preloader = preloads.Preloader(prepare=lambda: prepared.append(True))
    preloader.ensure(["no_such_library"])  # unknown: ignored, nothing to re-prepare
    assert preloader.generation == 0 and not prepared
    preloader.ensure(["sqlalchemy"])
    assert preloader.generation == 1 and len(prepared) == 1
    assert "sqlalchemy.orm" in sys.modules
    preloader.ensure(["sqlalchemy"])
    assert preloader.generation == 1 and len(prepared) == 1
    assert preloader.stale(0, ["sqlalchemy"])
    assert not preloader.stale(1, ["sqlalchemy"])
    assert not preloader.stale(0, [])


def test_the_preload_setting_offers_exactly_the_optional_libraries():
    from typing import get_args

    from a01gym.config import SandboxSettings

    (item,) = get_args(SandboxSettings.model_fields["preload"].annotation)
    assert set(get_args(item)) == set(preloads.OPTIONAL)
