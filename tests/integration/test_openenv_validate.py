"""``openenv validate``: the package manifest (``openenv.yaml``), at the static level.

The runtime level builds and runs the image the manifest names on a real Docker engine: see
``tests/integration/containers/test_openenv_runtime.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser

from a01gym.env import models

ROOT = Path(__file__).parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "idor_notes"
OPENENV = Path(sys.executable).parent / "openenv"
NOT_IMPLEMENTED = "grader not implemented in this build"


def test_manifest_declares_what_the_gateway_serves() -> None:
    manifest = OpenEnvYamlParser().parse(ROOT)
    assert manifest.name == "a01gym"
    assert manifest.capabilities.declared_tools == list(models.TOOL_NAMES)
    assert manifest.reward.range == (-1.0, 1.0)  # env/reward.py clamps the total there
    assert manifest.network.mode == "no-network"
    assert (ROOT / manifest.execution.dockerfile).is_file()


def test_openenv_validate_cli_static_level_passes() -> None:
    done = subprocess.run(
        [str(OPENENV), "validate", str(ROOT), "--level", "static", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["verdict"] == "pass"
    assert [(r["check_id"], r["status"]) for r in report["results"]] == [
        ("static.manifest", "pass")
    ]
