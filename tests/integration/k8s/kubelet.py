"""A process kubelet: runs sandbox pods and Job pods as local processes.

It watches sandbox pods and Job pods in one namespace, binds unscheduled ones to itself,
materialises their volumes (emptyDirs as directories, Secrets and ConfigMaps fetched from the
API server, a PersistentVolumeClaim as ``<claims>/<claimName>``, like a local-path
provisioner), rewrites the container's paths onto those directories, and starts it:

- a sandbox supervisor runs as its pod spec says, under bubblewrap (``podrun.py``): the pod's
  uid, every capability dropped, a read-only root, a size-limited tmpfs per emptyDir, its token
  Secret at its mountPath, its own env and args; so a sandbox that needs root or a writable
  root fails here as on a cluster. ``--pod-runtime fork`` instead forks it from here (the module
  is imported once, so each pod costs a fork, not an interpreter start: for bursts that measure
  the operator). Either way it listens on its own 127.x address, is probed on ``/healthz`` like
  the readiness probe would, and is reported Running/Ready with the pod IP;
- a pod of the platform image (no ``command``: the image's entrypoint is ``a01gym``) runs the
  local venv's ``a01gym`` console script with the container's args and env, in the pod's
  ``/tmp`` volume. Service URLs (``http://<service>:<port>``) are rewritten through the
  ``--services`` file, which stands in for cluster DNS and kube-proxy (an EndpointSlice cannot
  hold a loopback address).

Deleting a pod kills its process group; a process that exits turns the pod Succeeded or Failed
with its exit code (and, under ``FallbackToLogsOnError``, the log's tail as the message), which
is what the Job controller reads.

Run: ``python kubelet.py --kubeconfig K --namespace NS --root DIR``. Stop with SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime
import itertools
import json
import os
import re
import shutil
import signal
import socket
import sys
from pathlib import Path
from typing import Any

# Imported lazily by uvicorn when a server starts; importing them once here means every
# forked pod starts without importing anything.
import podrun

from a01gym.sandbox.host.kube_client import KubeApiError, KubeClient, KubeConnectionError
from a01gym.sandbox.host.kube_credentials import KubeCredentials
from a01gym.sandbox.inside import confinement, control

NODE = "process-kubelet"
SELECTORS = ("a01gym.dev/component=sandbox", "batch.kubernetes.io/job-name")
_SERVICE_URL = re.compile(r"//([a-z0-9-]+)(?:\.[a-z0-9-]+(?:\.svc(?:\.cluster\.local)?)?)?:(\d+)")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ProcessKubelet:
    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        root: Path,
        ip_prefix: str,
        claims: Path | None = None,
        services: Path | None = None,
        pod_runtime: str = "bwrap",
    ) -> None:
        self.kube, self.ns, self.root = kube, namespace, root
        self.pod_runtime = pod_runtime
        self.claims, self.services = claims or root / "claims", services
        self.running: dict[str, tuple[int, Path]] = {}  # pod uid -> (pid, dir)
        self.names: dict[str, str] = {}  # pod uid -> name
        self.containers: dict[str, dict[str, Any]] = {}  # pod uid -> container status basics
        self.finished: dict[str, Path] = {}  # pod uid -> dir kept (logs) until the pod goes
        self.starting: set[str] = set()
        a, b = ip_prefix.split(".")
        self.ips = (f"{a}.{b}.{i // 250}.{i % 250 + 2}" for i in itertools.count())
        # Containers starting at once: a burst of pods queues here instead of hundreds of
        # supervisors and probes fighting for two cores (a real kubelet serialises too).
        self.slots = asyncio.Semaphore(16)

    def path(self, name: str = "", sub: str = "") -> str:
        return f"/api/v1/namespaces/{self.ns}/pods" + (f"/{name}" if name else "") + sub

    async def run(self) -> None:
        monitor = asyncio.create_task(self.monitor())
        try:
            await asyncio.gather(*(self.watch(selector) for selector in SELECTORS))
        finally:
            monitor.cancel()

    async def watch(self, selector: str) -> None:
        while True:
            listing = await self.kube.list(self.path(), labelSelector=selector)
            for pod in listing["items"]:
                await self.handle("ADDED", pod)
            rv = listing["metadata"]["resourceVersion"]
            try:
                async for kind, pod in self.kube.watch(
                    self.path(), resource_version=rv, labelSelector=selector
                ):
                    if kind != "BOOKMARK":
                        await self.handle(kind, pod)
            except (KubeApiError, KubeConnectionError):
                await asyncio.sleep(0.2)

    async def handle(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid, name = meta["uid"], meta["name"]
        if kind == "DELETED":
            self.kill(uid)
            self.forget(uid)
            return
        if meta.get("deletionTimestamp"):
            self.kill(uid)
            self.forget(uid)
            with contextlib.suppress(KubeApiError):
                await self.kube.delete(self.path(name), uid=uid, gracePeriodSeconds=0)
            return
        if uid in self.running or uid in self.starting:
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        self.starting.add(uid)
        asyncio.get_running_loop().create_task(self.start(pod))

    async def start(self, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        uid, name = meta["uid"], meta["name"]
        try:
            if not spec.get("nodeName"):
                binding = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
                }
                await self.kube.create(self.path(name, "/binding"), binding)
            workdir = self.root / f"{name}-{uid[:8]}"
            mounts = await self.volumes(spec, workdir)
            container = spec["containers"][0]
            argv = [*container.get("command", []), *container.get("args", [])]
            argv = [sys.executable if a == "python" else _remap(a, mounts) for a in argv]
            self.containers[uid] = {
                "name": container["name"],
                "image": container["image"],
                "log": workdir / "container.log",
                "fallbackToLogs": container.get("terminationMessagePolicy")
                == "FallbackToLogsOnError",
            }
            if argv[1:3] == ["-m", "a01gym.sandbox.inside.control"]:
                port = container["ports"][0]["containerPort"]
                ip = self.free_ip(port)
                async with self.slots:
                    if self.pod_runtime == "bwrap":
                        pid = self.spawn_jailed(pod, container, ip, workdir)
                    else:
                        pid = _fork([*argv[3:], "--host", ip], workdir / "container.log")
                    self.running[uid] = (pid, workdir)
                    self.names[uid] = name
                    # The readiness probe: GET /healthz until it answers 200 (for up to ~4 s).
                    delay = 0.005
                    for _ in range(100):
                        if await _probe(ip, port, "/healthz"):
                            break
                        await asyncio.sleep(delay)
                        delay = min(delay * 1.5, 0.05)
            elif (container.get("command") or ["a01gym"])[0] == "a01gym":
                # The platform image's entrypoint is `a01gym`; its args pick the job.
                ip = "127.0.0.1"  # like a hostNetwork pod
                script = str(Path(sys.executable).with_name("a01gym"))
                skip = 1 if container.get("command") else 0  # argv[0] would be `a01gym`
                args = [self.resolve(a) for a in argv[skip:]]
                env = {}
                for item in container.get("env", []):
                    if "value" in item:
                        env[item["name"]] = self.resolve(_remap(item["value"], mounts))
                        continue
                    ref = item["valueFrom"]["secretKeyRef"]  # the only source the chart uses
                    data = (await self.secret(ref["name"]))["data"][ref["key"]]
                    env[item["name"]] = base64.b64decode(data).decode()
                cwd = mounts.get(container.get("workingDir") or "/tmp", workdir)
                pid = _spawn([script, *args], env, cwd, workdir / "container.log")
                self.running[uid] = (pid, workdir)
                self.names[uid] = name
            else:
                raise RuntimeError(f"unsupported container command {argv}")
            self.containers[uid]["startedAt"] = now = _now()
            ready = [
                {"type": t, "status": "True", "lastTransitionTime": now}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ]
            status = {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "hostIP": "127.0.0.1",
                "startTime": now,
                "conditions": ready,
                "containerStatuses": [
                    {
                        "name": container["name"],
                        "image": container["image"],
                        "imageID": "",
                        "ready": True,
                        "started": True,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": now}},
                    }
                ],
            }
            await self.kube.patch(self.path(name, "/status"), {"status": status})
        except KubeApiError as exc:
            if exc.status != 404:
                print(f"kubelet: pod {name}: {exc}", file=sys.stderr, flush=True)
            self.kill(uid)
        except (KeyError, OSError, RuntimeError) as exc:
            # A pod this kubelet cannot run fails visibly instead of staying Pending.
            print(f"kubelet: pod {name}: {exc!r}", file=sys.stderr, flush=True)
            self.kill(uid)
            failed = {"phase": "Failed", "reason": "KubeletError", "message": repr(exc)}
            with contextlib.suppress(KubeApiError):
                await self.kube.patch(self.path(name, "/status"), {"status": failed})
        finally:
            self.starting.discard(uid)

    def spawn_jailed(
        self, pod: dict[str, Any], container: dict[str, Any], ip: str, workdir: Path
    ) -> int:
        """Start the container as the pod spec says, under bubblewrap (``podrun``): its uid,
        no capabilities, a read-only root, a tmpfs per emptyDir, its Secret volumes at their
        mountPaths, its own env and args (only the pod IP is ours: ``--host``)."""
        volumes = workdir / "volumes"
        binds = {
            m["mountPath"]: volumes / m["name"]
            for m in container.get("volumeMounts", [])
            if (volumes / m["name"]).is_dir()
            and m["mountPath"] not in podrun.emptydir_mounts(pod["spec"], container)
        }
        env = {e["name"]: e["value"] for e in container.get("env", [])}
        argv = [sys.executable, *container["command"][1:], *container["args"], "--host", ip]
        command = podrun.bwrap_argv(pod["spec"], container, argv, env=env, binds=binds)
        return _spawn(command, {}, workdir, workdir / "container.log")

    def free_ip(self, port: int) -> str:
        """The next pod IP whose ``port`` is free: other stacks (a parallel test run) may
        be using the same 127.x addresses, and a supervisor that cannot bind exits."""
        for _ in range(1000):
            ip = next(self.ips)
            with socket.socket() as probe:
                try:
                    probe.bind((ip, port))
                except OSError:
                    continue
            return ip
        raise RuntimeError("no free pod IP")

    def resolve(self, text: str) -> str:
        """Service URLs in ``text`` pointed at the loopback address the services file gives."""
        if self.services is None or "//" not in text or not self.services.exists():
            return text
        table = json.loads(self.services.read_text())

        def swap(match: re.Match[str]) -> str:
            return "//" + table.get(f"{match[1]}:{match[2]}", match[0][2:])

        return _SERVICE_URL.sub(swap, text)

    async def secret(self, name: str) -> dict[str, Any]:
        """The Secret ``name``, waiting for it to exist like a kubelet does.

        Raises:
            RuntimeError: it did not appear within ~5 s.
        """
        for _ in range(100):
            try:
                return await self.kube.get(f"/api/v1/namespaces/{self.ns}/secrets/{name}")
            except KubeApiError as exc:
                if exc.status != 404:
                    raise
                await asyncio.sleep(0.05)
        raise RuntimeError(f"secret {name} never appeared")

    async def volumes(self, spec: dict[str, Any], workdir: Path) -> dict[str, Path]:
        local: dict[str, Path] = {}
        for volume in spec.get("volumes", []):
            target = workdir / "volumes" / volume["name"]
            if "persistentVolumeClaim" in volume:
                target = self.claims / volume["persistentVolumeClaim"]["claimName"]
            target.mkdir(parents=True, exist_ok=True)
            if "configMap" in volume:
                config_map = await self.kube.get(
                    f"/api/v1/namespaces/{self.ns}/configmaps/{volume['configMap']['name']}"
                )
                for key, value in (config_map.get("data") or {}).items():
                    (target / key).write_text(value)
            if "secret" in volume:
                source = volume["secret"]
                secret = await self.secret(source["secretName"])
                items = source.get("items") or [{"key": k, "path": k} for k in secret["data"]]
                for item in items:
                    path = target / item["path"]
                    path.write_bytes(base64.b64decode(secret["data"][item["key"]]))
                    path.chmod(source.get("defaultMode", 0o644) & 0o777)
            local[volume["name"]] = target
        mounts = {}
        for mount in spec["containers"][0].get("volumeMounts", []):
            mounts[mount["mountPath"]] = local[mount["name"]]
        return mounts

    def kill(self, uid: str) -> None:
        """SIGKILL a pod's processes now; reap them and remove its directory off the event
        loop (a burst of deletions must not stall the watch and the API calls)."""
        entry = self.running.pop(uid, None)
        self.names.pop(uid, None)
        if entry is None:
            return
        pid, workdir = entry
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            _reap(pid, workdir)
            return
        loop.run_in_executor(None, _reap, pid, workdir)

    async def monitor(self) -> None:
        """Reap children; a container that exits on its own ends its pod."""
        while True:
            await asyncio.sleep(0.2)
            for uid, (pid, _) in list(self.running.items()):
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, 1 << 8
                if not done:
                    continue
                name = self.names.pop(uid, None)
                _, workdir = self.running.pop(uid)
                with contextlib.suppress(ProcessLookupError):  # what the container left behind
                    os.killpg(pid, signal.SIGKILL)
                self.finished[uid] = workdir  # the log stays until the pod is deleted
                code = os.waitstatus_to_exitcode(status) if status else 0
                if code < 0:  # killed by a signal: the container runtime reports 128 + signal
                    code = 128 - code
                if name:
                    with contextlib.suppress(KubeApiError):
                        await self.kube.patch(
                            self.path(name, "/status"), {"status": self.terminated(uid, code)}
                        )

    def terminated(self, uid: str, code: int) -> dict[str, Any]:
        """The pod status of an exited container: phase, exit code, reason, message."""
        now = _now()
        status: dict[str, Any] = {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now}],
        }
        container = self.containers.get(uid)
        if container is None:
            return status
        state: dict[str, Any] = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": container.get("startedAt", now),
            "finishedAt": now,
        }
        if code != 0 and container["fallbackToLogs"]:
            with contextlib.suppress(OSError):
                lines = container["log"].read_text(errors="replace").splitlines()[-80:]
                state["message"] = "\n".join(lines)[-2048:]
        status["containerStatuses"] = [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"terminated": state},
            }
        ]
        return status

    def forget(self, uid: str) -> None:
        """A deleted pod: drop what was kept for its status and logs."""
        self.containers.pop(uid, None)
        if (workdir := self.finished.pop(uid, None)) is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    def shutdown(self) -> None:
        """SIGKILL every pod's process group, then reap (fast even with 500 pods: the pod
        directories go with the test's workdir, not one rmtree each)."""
        for pid, _ in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        for pid, _ in self.running.values():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.running.clear()


def _reap(pid: int, workdir: Path) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    shutil.rmtree(workdir, ignore_errors=True)


async def _probe(host: str, port: int, path: str) -> bool:
    """One HTTP/1.1 GET on a fresh connection; True on a 200 (what an httpGet probe does,
    without an HTTP client library's per-request overhead)."""
    writer = None
    try:
        async with asyncio.timeout(1.0):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
            )
            status = await reader.readline()
            return status.split(b" ", 2)[1:2] == [b"200"]
    except (OSError, TimeoutError, IndexError):
        return False
    finally:
        if writer is not None:
            writer.close()


def _remap(arg: str, mounts: dict[str, Path]) -> str:
    for mount_path, local in sorted(mounts.items(), key=lambda m: -len(m[0])):
        if arg == mount_path or arg.startswith(mount_path + "/"):
            return str(local) + arg[len(mount_path) :]
    return arg


def _spawn(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> int:
    """Fork and exec ``argv`` in its own session, with the container's env over ours."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        confinement.die_with_parent()  # kept across exec: the pod dies with its kubelet
        if os.getppid() != parent:
            os._exit(1)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(cwd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execve(argv[0], argv, {**os.environ, **env})
    finally:
        os._exit(127)


def _fork(args: list[str], log: Path) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        # A kubelet that dies (even by SIGKILL) takes its pods with it: no orphaned supervisors.
        confinement.die_with_parent()
        if os.getppid() != parent:
            os._exit(1)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        control.main(args)
    finally:
        os._exit(0)


async def _main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--claims", type=Path, help="PVC directories (default: ROOT/claims)")
    parser.add_argument("--services", type=Path, help="JSON {'<service>:<port>': 'host:port'}")
    parser.add_argument(
        "--pod-runtime",
        choices=("bwrap", "fork"),
        default="bwrap",
        help="sandbox pods under bubblewrap as their spec says (default), or forked from "
        "here as plain host processes (cheaper: for bursts that measure the operator)",
    )
    # Distinct per kubelet, so parallel stacks on one machine rarely meet (free_ip copes).
    parser.add_argument("--ip-prefix", default=f"127.{64 + os.getpid() % 160}")
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    kube = KubeClient(KubeCredentials.load(args.kubeconfig))
    kubelet = ProcessKubelet(
        kube, args.namespace, args.root, args.ip_prefix, args.claims, args.services,
        args.pod_runtime,
    )  # fmt: skip
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    task = asyncio.create_task(kubelet.run())
    print("kubelet: ready", flush=True)
    await stop.wait()
    task.cancel()
    kubelet.shutdown()
    await kube.aclose()


if __name__ == "__main__":
    asyncio.run(_main())
