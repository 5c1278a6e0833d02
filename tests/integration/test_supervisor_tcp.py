"""The supervisor as a standalone TCP server: the entrypoint of a Kubernetes sandbox pod."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys

import psutil

from a01gym.errors import SandboxError
from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import SupervisorClient


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_supervisor_serves_the_control_api_over_tcp(tmp_path, idor_bundle):
    port = _free_port()
    token_file = tmp_path / "token"
    token_file.write_text("pod-token")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "a01gym.sandbox.inside.control",
            "--dir",
            str(tmp_path / "sandbox"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--token-file",
            str(token_file),
        ],
    )
    client = SupervisorClient(token="pod-token", base_url=f"http://127.0.0.1:{port}")
    try:
        for _ in range(200):
            with contextlib.suppress(SandboxError):
                await client.health()
                break
            await asyncio.sleep(0.05)
        await client.load_workspace(idor_bundle.workspace, entrypoint="app.main:app")
        status = await client.restart_app()
        assert status.state is protocol.AppState.RUNNING, status.error
        response = await client.request(protocol.ProxyRequest(path="/health"))
        assert response.status == 200 and '"ok"' in response.body
        assert (tmp_path / "sandbox" / "workspace" / "app" / "main.py").exists()
    finally:
        await client.aclose()
        process.terminate()
        process.wait(timeout=10)
    # The app zygote and the app die with the supervisor (PDEATHSIG chain).
    for _ in range(50):
        leftovers = [
            p
            for p in psutil.process_iter(["cmdline"])
            if str(tmp_path) in " ".join(p.info["cmdline"] or [])
        ]
        if not leftovers:
            break
        await asyncio.sleep(0.05)
    assert leftovers == []
