"""``openenv validate``: the package manifest (``openenv.yaml``) and a running gateway.

The static level runs through the ``openenv`` CLI. The runtime level needs the image the
manifest names, which the CLI builds with Docker; with no Docker daemon here, the same runner
gets :class:`.openenv_local.LocalGatewayProvider` (the real gateway in an empty network
namespace) so every runtime grader ``openenv`` implements runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from openenv.validation import Level, load_policy, run_validation
from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser
from openenv.validation.runner import default_grader_registry

from a01gym.config import get_settings
from a01gym.env import models

from .openenv_local import LocalGatewayProvider

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


# openenv's collector opens its WebSocket the way websockets 17.1 deprecated (not our code)
@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")
def test_openenv_validate_runtime_level_passes_every_implemented_grader(
    tmp_path: Path, full_isolation: None
) -> None:
    """Needs root (network namespaces), as full sandbox isolation does: CI requires it."""
    provider = LocalGatewayProvider(FIXTURE, tmp_path / "runs")
    report = run_validation(ROOT, max_level=Level.RUNTIME, provider=provider)
    results = {r.check_id: r for r in report.results}
    manifest = OpenEnvYamlParser().parse(ROOT)
    implemented = {
        g.check_id
        for g in default_grader_registry(load_policy("v2")).select(manifest, Level.RUNTIME)
    }
    assert implemented == {
        "static.manifest",
        "runtime.network_policy",
        "runtime.observation_schema",
        "runtime.reward_well_formed",
        "runtime.state_contract",
    }, "openenv added graders: check them here"
    for check_id in ["runtime.startup", *sorted(implemented)]:
        result = results[check_id]
        assert result.status.value == "pass", (check_id, result.evidence)
    others = [r for r in report.results if r.check_id not in implemented | {"runtime.startup"}]
    assert others and all(r.evidence == [NOT_IMPLEMENTED] for r in others)
    assert report.verdict.value == "warn"  # PASS plus SKIPs for graders openenv lacks
    assert results["runtime.network_policy"].measured["counted_probes"] == ["tcp", "udp"]
    # the gateway stopped gracefully: no sandbox left behind
    pid = provider.started[-1].process.pid
    assert provider.started[-1].process.returncode in (0, -15)
    root = get_settings().sandbox.root
    assert (list(root.glob(f"{pid}-*")) if root.is_dir() else []) == []
