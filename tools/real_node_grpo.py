"""The chart's GRPO Job on the real node, as a user runs it: train image, smoke config.

    tools/envtest.sh && tools/images.sh --train
    .venv/bin/python tools/real_node_grpo.py [--workdir DIR]

Starts the real node (``tests/integration/k8s/node.py``), installs the chart with default
values (``tests/integration/containers/realnode.py``: the factory Job fills the scenario claim),
then ``helm upgrade``s it with the train image (``ghcr.io/a01gym/a01gym-train:<version>``,
imported from the local engine) and ``jobs.grpo`` on: ``--smoke`` (a tiny model built in the
pod, nothing downloaded), one GRPO step of two rollouts, the run on an output claim. The Job
reaches the release's gateway by its default URL (``http://a01gym-gateway:8000``: cluster DNS)
with the token from the chart's Secret. Prints the Job's status, the pod's container and exit,
the log's tail, and the adapter written on the claim; stops every process it started.

Not in ``make test``: the train image is 6.7 GB (torch from PyPI is the CUDA build), which the
node's containerd then holds again, ~20 GB of disk at the peak and ~10 minutes here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration" / "k8s"))
sys.path.insert(0, str(ROOT / "tests" / "integration" / "containers"))

from node import chart_images  # noqa: E402
from realnode import NAMESPACE, RealCluster  # noqa: E402

RUNS_CLAIM = "a01gym-train-runs"


def _train_image() -> dict[str, str]:
    """The train image's chart-style name, mapped to its local tag (same version)."""
    version = next(iter(chart_images())).rsplit(":", 1)[1]
    return {f"ghcr.io/a01gym/a01gym-train:{version}": f"a01gym/a01gym-train:{version}"}


def run(workdir: Path) -> int:
    cluster = RealCluster(workdir, images=_train_image())
    cluster.check()
    began = time.monotonic()
    try:
        cluster.start()
        print(f"chart installed and Ready in {time.monotonic() - began:.0f} s", flush=True)
        runs = workdir / "runs"
        cluster.host_volume("train-runs", runs, "4Gi", storage_class="manual")
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": RUNS_CLAIM},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "manual",
                    "resources": {"requests": {"storage": "4Gi"}},
                },
            },
            NAMESPACE,
        )
        image = next(iter(_train_image())).rsplit(":", 1)[0]
        values = {
            "image": {"repository": image},
            "jobs": {
                "grpo": {
                    "enabled": True,
                    "smoke": True,
                    "maxSteps": 1,
                    "config": {"grpo": {"per_device_train_batch_size": 2, "num_generations": 2}},
                    # the default requests 2 CPUs: more than a 2-core node has left
                    "resources": {
                        "requests": {"cpu": "1", "memory": "2Gi"},
                        "limits": {"cpu": "2", "memory": "8Gi"},
                    },
                    "output": {"claim": RUNS_CLAIM, "mountPath": "/runs", "runName": "smoke"},
                }
            },
        }
        (workdir / "grpo.yaml").write_text(json.dumps(values))
        upgraded = time.monotonic()
        cluster.helm(
            "upgrade", "a01gym", str(ROOT / "charts" / "a01gym"), "--namespace", NAMESPACE,
            "--reuse-values", "-f", str(workdir / "grpo.yaml"),
        )  # fmt: skip
        jobs = cluster.get("-n", NAMESPACE, "jobs", "-l", "app.kubernetes.io/component=grpo")
        job = jobs["items"][0]["metadata"]["name"]
        waited = cluster.kubectl(
            "-n", NAMESPACE, "wait", "--for=condition=complete", f"job/{job}", "--timeout=1500s",
            timeout=1600, check=False,
        )  # fmt: skip
        print(f"{waited.strip()} ({time.monotonic() - upgraded:.0f} s after the upgrade)")
        pods = cluster.get("-n", NAMESPACE, "pods", "-l", f"job-name={job}")["items"]
        for pod in pods:
            (status,) = pod["status"]["containerStatuses"]
            print(pod["metadata"]["name"], status["containerID"], status["image"])
            print(json.dumps(status["state"]))
            print(cluster.kubectl("-n", NAMESPACE, "logs", pod["metadata"]["name"])[-1500:])
        adapter = runs / "smoke" / "adapter" / "adapter_model.safetensors"
        size = adapter.stat().st_size if adapter.exists() else 0
        print(f"adapter on the output claim: {adapter} ({size} bytes)")
        return 0 if size > 0 else 1
    finally:
        cluster.stop()
        shutil.rmtree(workdir / "node", ignore_errors=True)  # the node's image store (GBs)
        print(f"stopped after {time.monotonic() - began:.0f} s; the run stays in {workdir}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="default: a new temporary folder")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="a01gym-grpo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    return run(workdir)


if __name__ == "__main__":
    sys.exit(main())
