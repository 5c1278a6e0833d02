"""Fixtures of the report tests; the run directory parts are built by :mod:`runfiles`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import runfiles


@pytest.fixture(scope="package")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run dir with real noop and reference episodes (2 each) and synthetic training rows."""
    run_dir = tmp_path_factory.mktemp("run")
    asyncio.run(runfiles.evaluate(run_dir, episodes=2))
    runfiles.write_training(run_dir)
    return run_dir
