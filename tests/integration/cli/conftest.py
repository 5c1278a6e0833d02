"""The installed ``a01gym`` console script, run as a user runs it: in a subprocess.

``CliRunner`` calls the typer app directly and so bypasses :func:`a01gym.cli.__main__.main`,
where exit codes are decided; these tests do not.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"
SCRIPT = Path(sys.executable).with_name("a01gym")

Run = Callable[..., subprocess.CompletedProcess[str]]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any A01GYM_* setting, a wide terminal, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A01GYM_", "OPENAI_"))}
    return env | {"COLUMNS": "200", "NO_COLOR": "1"} | extra


@pytest.fixture
def a01gym(tmp_path: Path) -> Run:
    """Run the installed console script; returns the completed process."""
    assert SCRIPT.is_file(), f"no console script at {SCRIPT}: run pip install -e '.[dev]'"

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
        return subprocess.run(
            [str(SCRIPT), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=tmp_path,
            env=clean_env(**(env or {})),
        )

    return run


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """``a01gym serve --port 0`` on the fixture bundle; yields the URL it printed."""
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--port", "0", "--cache", str(FIXTURE), "--runs-dir", "runs"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
    )
    try:
        assert process.stderr is not None
        seen = []
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(r"gateway on (http://127\.0\.0\.1:(\d+))", line)
            if found:
                url = found.group(1)
        assert url is not None, "serve printed no URL:\n" + "".join(seen)
        assert not url.endswith(":8000") and not url.endswith(":0")
        # keep reading, so the server never blocks on a full pipe
        threading.Thread(target=process.stderr.read, daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
