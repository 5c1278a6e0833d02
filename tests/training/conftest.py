"""Fixtures of the report tests; the run directory parts are built by :mod:`runfiles`."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from pathlib import Path

import pytest
import runfiles

# Without the train extra these modules cannot import; CI sets A01GYM_REQUIRE_TRAIN=1, so there
# a missing stack fails instead of being left out.
if importlib.util.find_spec("trl") is None and os.environ.get("A01GYM_REQUIRE_TRAIN") != "1":
    collect_ignore = ["test_train_smoke.py", "test_trajectories.py", "test_prefix_forward.py"]


@pytest.fixture(scope="package")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run dir with real noop and reference episodes (2 each) and synthetic training rows."""
    run_dir = tmp_path_factory.mktemp("run")
    asyncio.run(runfiles.evaluate(run_dir, episodes=2))
    runfiles.write_training(run_dir)
    return run_dir
