"""The README's and docs/connecting.md's Python snippets run as written.

A small cache is built with the demo config (the factory defaults `make demo` uses, fewer
scenarios), served by `a01gym serve` as the README says, and each ```python block is run in
its own interpreter with only the server's address changed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from a01gym.gateway import server

ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
DOCUMENTED_URL = "http://127.0.0.1:8000"

pytestmark = pytest.mark.slow


def _snippets(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.DOTALL)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, demo_cache: Path) -> Iterator[str]:
    """`a01gym serve --cache CACHE` on a demo-config cache of 12 scenarios."""
    tmp = tmp_path_factory.mktemp("docs")
    shutil.copytree(demo_cache, tmp / "cache")
    port = server.free_port()
    log = tmp / "serve.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [
                str(BIN / "a01gym"),
                "serve",
                "--cache",
                str(tmp / "cache"),
                "--port",
                str(port),
                "--runs-dir",
                str(tmp / "runs"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "A01GYM_SANDBOX__POOL_SIZE": "1"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "a01gym serve did not come up"
            time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)  # our own child, by PID
        proc.wait(30)


def _run(snippet: str, url: str) -> str:
    assert DOCUMENTED_URL in snippet, "a snippet must talk to the documented address"
    done = subprocess.run(
        [sys.executable, "-c", snippet.replace(DOCUMENTED_URL, url)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"{snippet}\n--- stderr:\n{done.stderr[-3000:]}"
    return done.stdout


def test_readme_client_snippet_runs_as_written(served: str) -> None:
    (snippet,) = _snippets(ROOT / "README.md")
    out = _run(snippet, served)
    assert "## Budget and grading" in out  # the first observation was printed
    assert re.search(r"^GET /users/me as \w+ -> HTTP 200$", out, re.MULTILINE), out
    assert re.search(r"^0\.0 \{", out, re.MULTILINE), out  # no invalid action was charged


def test_connecting_snippets_run_as_written(served: str) -> None:
    ws_snippet, resume_snippet, mcp_snippet = _snippets(ROOT / "docs" / "connecting.md")
    out = _run(ws_snippet, served)
    assert "## Budget and grading" in out
    assert "app/main.py (lines 1-" in out  # the entrypoint: in every layout
    assert re.search(r"^0\.0 \{", out, re.MULTILINE), out
    out = _run(resume_snippet, served)
    assert out.splitlines()[:2] == ["list_files", "0.0"], out  # the same episode, then graded
    out = _run(mcp_snippet, served)
    assert "## Budget and grading" in out  # the task reached the MCP client
    assert "'read_file'" in out and "TASK.md (lines 1-" in out
    assert re.search(r"^0\.0 True$", out, re.MULTILINE), out
