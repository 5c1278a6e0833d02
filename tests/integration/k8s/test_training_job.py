"""The chart's GRPO Job on the real control plane: the Job controller creates its pod from the
rendered template, the process kubelet runs it as ``a01gym train --smoke`` (the local venv's
console script) against a real gateway on loopback, and the Job ends Complete with the adapter
and metrics in the run directory the values chose, on the output claim."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import free_port
from stack import RELEASE, Stack, render_chart

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

CACHE_CLAIM = f"{RELEASE}-scenarios"  # the chart's own scenario cache claim
RUNS_CLAIM = "a01gym-train-runs"
RUN_NAME = "smoke"
JOB_TIMEOUT_S = 1500.0
TOKEN = secrets.token_urlsafe(24)
"""The gateway's token: the Job reads it from the chart's token Secret (applied with it)."""


@pytest.fixture
def gateway(stack: Stack, tmp_path: Path, demo_cache: Path) -> Iterator[str]:
    """``a01gym serve`` (local sandboxes) on the scenario cache claim, with ``TOKEN`` as
    the chart's gateway would have; yields host:port."""
    cache = stack.claims / CACHE_CLAIM
    if not cache.is_dir() or not any(cache.iterdir()):  # filled once per session
        shutil.copytree(demo_cache, cache, dirs_exist_ok=True)
    port = free_port()
    log = tmp_path / "gateway.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("a01gym")), "serve", "--host", "127.0.0.1",
             "--port", str(port), "--cache", str(cache), "--runs-dir", str(tmp_path / "runs"),
             "--token", TOKEN],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "gateway not healthy in 120 s"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        yield f"127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


def _wait_finished(stack: Stack, job: str) -> dict[str, Any]:
    path = f"/apis/batch/v1/namespaces/{stack.namespace}/jobs/{job}"
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        status = stack.plane.request("GET", path).get("status") or {}
        done = {
            c["type"]
            for c in status.get("conditions", [])
            if c["status"] == "True" and c["type"] in ("Complete", "Failed")
        }
        if done:
            return status
        time.sleep(2)
    raise TimeoutError(f"Job {job} not finished after {JOB_TIMEOUT_S:.0f} s")


def test_grpo_job_runs_train_smoke_to_complete_with_the_adapter_on_the_output_claim(
    stack: Stack, gateway: str, tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "pool": {"create": False},
                "jobs": {
                    "factory": {"enabled": False},  # the cache is built by the fixture
                    "grpo": {
                        "enabled": True,
                        "smoke": True,
                        # one step of two rollouts: this checks the Job's wiring; the smoke
                        # run itself is test_train_smoke's
                        "maxSteps": 1,
                        "config": {
                            "grpo": {"per_device_train_batch_size": 2, "num_generations": 2}
                        },
                        "output": {"claim": RUNS_CLAIM, "mountPath": "/runs", "runName": RUN_NAME},
                    },
                },
            }
        )
    )
    docs = render_chart(
        stack.plane.bin_dir / "helm", stack.namespace, include_crds=False, values_files=(values,)
    )
    service = next(
        d for d in docs if d["kind"] == "Service" and d["metadata"]["name"].endswith("-gateway")
    )
    job = _one(docs, "Job")
    config_map = _one(docs, "ConfigMap")
    name, port = service["metadata"]["name"], service["spec"]["ports"][0]["port"]
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--gateway-url") + 1] == f"http://{name}:{port}"
    assert "--smoke" in args
    stack.publish_service(name, port, gateway)

    ns, job_name = stack.namespace, job["metadata"]["name"]
    token_secret = _one(docs, "Secret")  # the chart's generated gateway token
    token_secret["data"]["token"] = base64.b64encode(TOKEN.encode()).decode()
    stack.plane.apply(token_secret, ns)
    stack.plane.apply(config_map, ns)
    stack.plane.apply(job, ns)
    try:
        status = _wait_finished(stack, job_name)
        selector = f"batch.kubernetes.io/job-name={job_name}"
        pods = stack.plane.request("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")
        pods = pods["items"]
        assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
        pod = pods[0]
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert status.get("succeeded") == 1, json.dumps(terminated, indent=1)
        assert {c["type"] for c in status["conditions"] if c["status"] == "True"} >= {"Complete"}
        assert pod["status"]["phase"] == "Succeeded"
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert pod["metadata"]["ownerReferences"][0]["name"] == job_name
    finally:
        stack.plane.request(
            "DELETE",
            f"/apis/batch/v1/namespaces/{ns}/jobs/{job_name}",
            {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
        )
        stack.plane.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/{job_name}")

    run = stack.claims / RUNS_CLAIM / RUN_NAME
    assert (run / "adapter" / "adapter_model.safetensors").stat().st_size > 0
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert metrics, "metrics.jsonl is empty"
    assert any((run / "trackio").iterdir()), "Trackio wrote nothing under the run directory"
    resolved = yaml.safe_load((run / "config.yaml").read_text())
    assert resolved["gateway"]["url"] == f"http://{gateway}"  # the Service, routed by the kubelet
    assert resolved["output_dir"] == str(run)
    # The solver's episodes ran on the gateway; their logs came back through its artifacts route.
    assert list((run / "episodes").rglob("steps.jsonl")), "no solver episode logs in the run dir"
