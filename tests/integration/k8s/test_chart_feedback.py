"""The chart's feedback CronJob: analyze, then the factory, on the scenario cache the gateway
reads its weights from. Rendered with the real ``helm`` (kubeconform-strict validation of the
same values runs in ``test_chart.py``, which needs the control plane's OpenAPI)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import find_bin_dir
from stack import CHART, render_chart

FULL = CHART / "ci" / "full-values.yaml"


@pytest.fixture
def helm() -> Path:
    path = find_bin_dir() / "helm"
    if not path.exists():
        reason = f"no helm at {path}; run tools/envtest.sh"
        if os.environ.get("A01GYM_REQUIRE_K8S") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _kind(docs: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any] | None:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return found[0] if found else None


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def test_no_cronjob_and_no_weights_by_default(helm: Path) -> None:
    docs = render_chart(helm, "a01gym", include_crds=False)
    assert _kind(docs, "CronJob", "-feedback") is None
    gateway = _kind(docs, "Deployment", "-gateway")
    assert gateway is not None
    (container,) = gateway["spec"]["template"]["spec"]["containers"]
    assert "A01GYM_GATEWAY__WEIGHTS" not in _env(container)


def test_cronjob_chains_analyze_then_factory_on_the_gateways_cache(helm: Path) -> None:
    docs = render_chart(helm, "a01gym", include_crds=False, values_files=(FULL,))
    cron = _kind(docs, "CronJob", "-feedback")
    gateway = _kind(docs, "Deployment", "-gateway")
    assert cron is not None and gateway is not None
    assert (cron["spec"]["schedule"], cron["spec"]["concurrencyPolicy"]) == ("30 2 * * *", "Forbid")
    job = cron["spec"]["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    assert (job["backoffLimit"], pod["restartPolicy"]) == (0, "Never")
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    (analyze,) = pod["initContainers"]
    (factory,) = pod["containers"]
    assert analyze["args"] == [
        "analyze", "/logs/episodes",
        "--json-out", "/scenarios/feedback/analysis.json",
        "--weights-out", "/scenarios/feedback/weights.json",
        "--job-out", "/scenarios/feedback/job.yaml", "--cache", "/scenarios",
        "--band-low", "0.3", "--band-high", "0.7", "--min-episodes", "2", "--per-cell", "6",
    ]  # fmt: skip
    assert factory["args"] == [
        "factory", "build", "--from-feedback", "/scenarios/feedback/job.yaml",
        "--out", "/scenarios", "--workers", "2",
    ]  # fmt: skip
    for container in (analyze, factory):
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["resources"]["limits"] == {"cpu": "4", "memory": "4Gi"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in analyze["volumeMounts"]}
    assert mounts["/logs"]["readOnly"] is True
    assert volumes["logs"]["persistentVolumeClaim"] == {
        "claimName": "a01gym-gateway-runs",
        "readOnly": True,
    }
    # The gateway writes its episode logs to that claim and reads the weights analyze writes.
    gateway_pod = gateway["spec"]["template"]["spec"]
    (serve,) = gateway_pod["containers"]
    assert _env(serve)["A01GYM_GATEWAY__WEIGHTS"] == "/scenarios/feedback/weights.json"
    gateway_volumes = {v["name"]: v for v in gateway_pod["volumes"]}
    assert gateway_volumes["runs"]["persistentVolumeClaim"] == {"claimName": "a01gym-gateway-runs"}
    cache_claim = gateway_volumes["scenarios"]["persistentVolumeClaim"]["claimName"]
    assert volumes["scenarios"]["persistentVolumeClaim"] == {"claimName": cache_claim}


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ({"feedback": {"enabled": True}}, "feedback.logs.claim"),
        ({"feedback": {"enabled": True, "logs": {"claim": "r"}, "band": {"low": 2}}}, "band/low"),
        ({"feedback": {"enabled": True, "logs": {"claim": "r", "path": "/etc"}}}, "logs/path"),
        (
            {
                "feedback": {"enabled": True, "logs": {"claim": "r"}},
                "scenarioCache": {"create": False},
            },
            "scenarioCache.existingClaim",
        ),
    ],
    ids=["no-logs-claim", "band-out-of-range", "absolute-logs-path", "no-cache"],
)
def test_helm_refuses_bad_feedback_values_naming_the_fix(
    helm: Path, tmp_path: Path, values: dict[str, Any], error: str
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    result = subprocess.run(
        [str(helm), "template", "a01gym", str(CHART), "-f", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0
    assert error in result.stderr
