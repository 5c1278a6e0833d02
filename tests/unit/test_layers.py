"""The import-linter contracts in pyproject.toml hold, and they catch an upward import.

``lint-imports`` runs on a copy of ``src/a01gym`` (first on ``PYTHONPATH``, so the copy is
what it analyses): unchanged it passes; with one import that runs upward, or with the
runtime importing the factory, or the inside of a sandbox importing its host side, it fails and
names the contract.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tmp_path: Path, edit: tuple[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "a01gym", src / "a01gym")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if edit is not None:
        module, line = edit
        path = src / "a01gym" / module
        path.write_text(path.read_text() + f"\n{line}  # deliberately wrong\n")
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_layer_contracts_hold(tmp_path: Path) -> None:
    done = _lint(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("edit", "broken"),
    [
        (("scenario/bundle.py", "from a01gym.sandbox import layout"), "Layers"),
        (("config.py", "import a01gym.env.models"), "Layers"),
        (("gateway/metrics.py", "from a01gym.training import stats"), "Layers"),  # siblings
        (("env/sampler.py", "from a01gym.factory import compiler"), "never imports the factory"),
        (("grading/scoring.py", "from a01gym.env import models"), "Layers"),
        (("grading/verdicts.py", "from a01gym.sandbox import protocol"), "stay pure"),
        (("sandbox/host/client.py", "from a01gym.grading import runner"), "Layers"),
        (
            ("sandbox/inside/supervisor.py", "from a01gym.sandbox.host import client"),
            "never imports the host side",
        ),
        (  # indirectly, through a shared module
            ("sandbox/layout.py", "from a01gym.sandbox.host import readiness"),
            "never imports the host side",
        ),
        (("sandbox/protocol.py", "from a01gym.sandbox.inside import workspace"), "neither side"),
    ],
)
def test_a_wrong_import_breaks_a_contract(
    tmp_path: Path, edit: tuple[str, str], broken: str
) -> None:
    done = _lint(tmp_path, edit)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if "BROKEN" in x)
    assert broken in line
