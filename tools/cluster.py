"""A real single-node Kubernetes cluster on this machine, for trying the chart by hand.

    tools/envtest.sh                          # once: builds kubelet, scheduler, proxy, kubectl
    make images                               # the sandbox and platform images
    .venv/bin/python tools/cluster.py up      # prints the kubeconfig path, returns when Ready
    export KUBECONFIG=/tmp/a01gym-cluster/plane/admin.kubeconfig
    helm install a01gym charts/a01gym ...     # see docs/kubernetes.md, "A real node here"
    .venv/bin/python tools/cluster.py down    # stops every process it started, by PID

``up`` starts a supervisor in the background that owns the cluster (etcd, kube-apiserver,
controller-manager, kube-scheduler, a kubelet on containerd + runc, a CNI bridge, kube-proxy:
``tests/integration/k8s/node.py``, which the real-node tests use too) and stops it on SIGTERM,
which ``down`` sends. The chart's default image names (``ghcr.io/a01gym/...:<version>``) are
imported into the node from the local Docker engine, so a default install pulls nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration" / "k8s"))

from controlplane import ControlPlane  # noqa: E402
from node import BRIDGE_ADDRESS, Node, chart_images  # noqa: E402

DEFAULT_WORKDIR = Path("/tmp/a01gym-cluster")


def _serve(workdir: Path) -> None:
    """The supervisor: start the cluster, write ``ready``, wait for SIGTERM, stop it."""
    stop = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    plane = ControlPlane(workdir / "plane", host=BRIDGE_ADDRESS, controllers="*")
    node = Node(workdir / "node", plane, images=chart_images())
    try:
        node.start()
        (workdir / "ready").write_text(str(plane.kubeconfig("admin")))
        while not stop:
            time.sleep(0.5)
    except BaseException as exc:  # reported to `up`, which is waiting
        (workdir / "failed").write_text(f"{type(exc).__name__}: {exc}")
    finally:
        node.stop()
        (workdir / "supervisor.pid").unlink(missing_ok=True)


def up(workdir: Path, timeout_s: float) -> int:
    pidfile = workdir / "supervisor.pid"
    if pidfile.exists():
        print(f"a cluster is already up (pid {pidfile.read_text()}): run `down` first")
        return 2
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("ready", "failed"):
        (workdir / name).unlink(missing_ok=True)
    with open(workdir / "supervisor.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, __file__, "_serve", "--workdir", str(workdir)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    pidfile.write_text(str(process.pid))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (workdir / "ready").exists():
            print((workdir / "ready").read_text())
            return 0
        if (workdir / "failed").exists() or process.poll() is not None:
            break
        time.sleep(0.5)
    failed = workdir / "failed"
    reason = failed.read_text() if failed.exists() else "no answer in time"
    print(f"the cluster did not come up: {reason}\nlogs: {workdir}/node/*.log", file=sys.stderr)
    down(workdir)
    return 1


def down(workdir: Path) -> int:
    pidfile = workdir / "supervisor.pid"
    if not pidfile.exists():
        print("no cluster is up")
        return 0
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pidfile.unlink(missing_ok=True)
        return 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print("stopped")
            return 0
        time.sleep(0.5)
    print(f"supervisor {pid} still running after 120 s", file=sys.stderr)
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "_serve"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for `up`")
    args = parser.parse_args()
    if args.command == "_serve":
        _serve(args.workdir)
        return 0
    if args.command == "up":
        return up(args.workdir, args.timeout)
    return down(args.workdir)


if __name__ == "__main__":
    sys.exit(main())
