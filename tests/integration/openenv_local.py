"""A local-process provider for ``openenv validate``'s runtime level, for hosts without Docker.

``openenv validate .`` builds the image that ``openenv.yaml`` names (``validation.execution``)
with Docker and plays ``deploy/openenv/runtime.json`` against it. Where no Docker daemon runs
(this machine, CI) the tests hand :class:`LocalGatewayProvider` to the same runner
(``openenv.validation.run_validation``), so every runtime grader ``openenv`` implements runs
against the real gateway:

* ``build`` installs nothing: the "image" is this checkout as installed in the running venv,
  named by the package's source digest (the runner only accepts providers that build).
* ``start`` runs the app ``a01gym serve`` runs, in a network namespace of its own with nothing
  but a loopback interface that is down (the manifest declares ``no-network``). It serves on a
  loopback socket made in the host's namespace and handed down, so the validator can
  reach it and the gateway can reach nothing.
* ``measure_network`` proves that from outside: a TCP and a UDP sink listen on an address in a
  third namespace made for the purpose; a probe there reaches them, the same probe in the
  gateway's namespace must be refused by the network (``ENETUNREACH``).

Needs root (``unshare --net``, ``nsenter``) and ``ip``; the local sandbox backend needs them too.
The declared CPU and memory budget is not enforced here (Docker's ``--cpus``/``--memory``): no
grader of ``openenv`` 0.10 measures it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from openenv.validation.manifest import ExecutionDeclaration
from openenv.validation.providers import ExecResult, ProviderError, StartupError
from openenv.validation.runner import source_digest
from openenv.validation.runtime.contracts import LaunchSpec
from openenv.validation.types import ProviderCapability

__all__ = ["LocalGatewayProvider", "LocalGatewaySubject"]

_SERVE = """
import socket, sys, uvicorn
from a01gym.gateway import app, server
config = server.uvicorn_config(app.create_app(), host="127.0.0.1", port=0)
uvicorn.Server(config).run(sockets=[socket.socket(fileno=int(sys.argv[1]))])
"""

_SINK_ADDRESS = "10.254.0.1"  # on the loopback of a namespace made for the sinks only
_SINK_PORT = 9

_SINK = f"""
import socket, subprocess, threading
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["ip", "addr", "add", "{_SINK_ADDRESS}/32", "dev", "lo"], check=True)
tcp = socket.create_server(("{_SINK_ADDRESS}", {_SINK_PORT}))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("{_SINK_ADDRESS}", {_SINK_PORT}))
def echo():
    while True:
        data, peer = udp.recvfrom(64)
        udp.sendto(data, peer)
threading.Thread(target=echo, daemon=True).start()
print("ready", flush=True)
while True:
    conn, _ = tcp.accept()
    conn.sendall(b"sink\\n")
    conn.close()
"""

_PROBE = f"""
import errno, json, socket
def outcome(probe):
    try:
        probe()
    except ConnectionRefusedError:
        return {{"result": "reachable"}}  # something answered: the path exists
    except socket.timeout:
        return {{"result": "inconclusive", "errno": None}}
    except OSError as exc:
        denied = exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH)
        return {{"result": "denied" if denied else "inconclusive", "errno": exc.errno}}
    return {{"result": "reachable"}}
def tcp():
    with socket.create_connection(("{_SINK_ADDRESS}", {_SINK_PORT}), timeout=3) as s:
        s.recv(16)
def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        s.connect(("{_SINK_ADDRESS}", {_SINK_PORT}))
        s.send(b"probe")
        s.recv(16)
print(json.dumps({{"tcp": outcome(tcp), "udp": outcome(udp)}}))
"""


class LocalGatewayProvider:
    """Starts the gateway as a local process in an empty network namespace."""

    name = "a01gym-local"
    capabilities = frozenset({ProviderCapability.IMAGE_BUILD, ProviderCapability.NETWORK_POLICY})
    supported_network_modes = frozenset({"no-network"})

    def __init__(self, cache: Path, runs_dir: Path) -> None:
        self.cache = cache
        self.runs_dir = runs_dir
        self.started: list[LocalGatewaySubject] = []

    def build(self, root: Path, execution: ExecutionDeclaration) -> str:
        """The checkout as installed here, named by its digest (nothing to build)."""
        return "sha256:" + source_digest(root)

    def start(self, spec: LaunchSpec) -> LocalGatewaySubject:
        """Start the gateway and wait for ``/health``.

        Raises:
            StartupError: when it does not answer within ``spec.startup_timeout_s``.
        """
        listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        log = self.runs_dir / f"gateway-{len(self.started)}.log"
        env = {
            **os.environ,
            "A01GYM_GATEWAY__CACHE": str(self.cache),
            "A01GYM_GATEWAY__RUNS_DIR": str(self.runs_dir),
            "A01GYM_SANDBOX__POOL_SIZE": "1",
        }
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["unshare", "--net", "--", sys.executable, "-c", _SERVE, str(listener.fileno())],
                pass_fds=(listener.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        subject = LocalGatewaySubject(process, listener, log, spec)
        self.started.append(subject)
        try:
            subject.wait_ready(spec.startup_timeout_s)
        except BaseException:
            subject.stop()
            raise
        return subject


class LocalGatewaySubject:
    """One running gateway: reachable on ``base_url``, stoppable, measurable."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        listener: socket.socket,
        log: Path,
        spec: LaunchSpec,
    ) -> None:
        self.process = process
        self.listener = listener
        self.log = log
        self.spec = spec
        self.base_url = f"http://127.0.0.1:{listener.getsockname()[1]}"

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartupError(f"the gateway exited ({self.process.returncode}): {self.logs()}")
            try:
                health = httpx.get(self.base_url + "/health", timeout=1, trust_env=False)
                if health.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise StartupError(f"no /health 200 within {timeout_s} s: {self.logs()}")

    def inspect(self) -> dict[str, Any]:
        return {"pid": self.process.pid, "network_mode": "none", "base_url": self.base_url}

    def logs(self, max_bytes: int = 65536) -> str:
        return self.log.read_bytes()[-max_bytes:].decode("utf-8", "replace")

    def exec(self, argv: list[str], timeout_s: float) -> ExecResult:
        """Run ``argv`` in the gateway's network namespace."""
        started = time.monotonic()
        done = subprocess.run(
            ["nsenter", f"--net=/proc/{self.process.pid}/ns/net", "--", *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        return ExecResult(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def measure_network(self) -> dict[str, Any]:
        """``NetworkEvidence``: the gateway namespace's interfaces and routes, and a TCP and a
        UDP probe to sinks in a namespace of their own, from there (control) and from here."""
        with subprocess.Popen(
            ["unshare", "--net", "--", sys.executable, "-c", _SINK],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as sink:
            try:
                assert sink.stdout is not None
                if sink.stdout.readline().strip() != b"ready":
                    raise ProviderError("the network sink did not start (needs root and ip)")
                control = self._probe(sink.pid)
                subject = self._probe(self.process.pid)
            finally:
                sink.kill()
        return {
            "schema_version": 1,
            "requested_mode": self.spec.network.mode,
            "subject_network_mode": "none" if self._interfaces() == ["lo"] else "private",
            "namespace": {
                "interfaces": self._interfaces(),
                "default_route": any(
                    fields[1] == "00000000" for fields in self._table("route") if len(fields) > 1
                ),
                "ipv6_non_loopback": sum(
                    1 for fields in self._table("if_inet6", header=False) if fields[-1] != "lo"
                ),
                "listening_ports": sorted(
                    {
                        int(fields[1].rsplit(":", 1)[1], 16)
                        for name in ("tcp", "tcp6")
                        for fields in self._table(name)
                        if len(fields) > 3 and fields[3] == "0A"
                    }
                ),
            },
            "probes": [
                {"kind": kind, "control": control[kind], "subject": subject[kind]}
                for kind in ("tcp", "udp")
            ],
        }

    def _probe(self, pid: int) -> dict[str, Any]:
        done = subprocess.run(
            ["nsenter", f"--net=/proc/{pid}/ns/net", "--", sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise ProviderError(f"network probe failed: {done.stderr[-500:]}")
        return json.loads(done.stdout)

    def _table(self, name: str, *, header: bool = True) -> list[list[str]]:
        lines = Path(f"/proc/{self.process.pid}/net/{name}").read_text().splitlines()
        return [line.split() for line in lines[1 if header else 0 :] if line.strip()]

    def _interfaces(self) -> list[str]:
        return sorted(fields[0].rstrip(":") for fields in self._table("dev")[1:])

    def stop(self) -> None:
        """SIGTERM (the gateway releases every sandbox), then SIGKILL after 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.listener.close()
