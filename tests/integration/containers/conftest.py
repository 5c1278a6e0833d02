"""The container tier: a real Docker engine and the images ``tools/images.sh`` builds here.

Without an engine to start (``apt-get install docker.io debootstrap``) this tier skips, except
in CI (``A01GYM_REQUIRE_DOCKER=1``), where it fails. A ``dockerd`` this fixture starts is
stopped at the end of the session, by its PID; one already running is left alone. The first
build on a machine takes minutes (debootstrap, two pip installs); later ones reuse the
engine's layer cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "tests" / "integration" / "k8s"))


def _unavailable(reason: str) -> None:
    if os.environ.get("A01GYM_REQUIRE_DOCKER") == "1":
        pytest.fail(f"A01GYM_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


def _answers() -> bool:
    return (
        subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30).returncode
        == 0
    )


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if shutil.which("docker") is None:
        _unavailable("no docker client (apt-get install docker.io)")
    if _answers():
        yield
        return
    if shutil.which("dockerd") is None:
        _unavailable("no Docker engine (apt-get install docker.io)")
    log = tmp_path_factory.mktemp("dockerd") / "dockerd.log"
    with log.open("wb") as out:
        process = subprocess.Popen(["dockerd"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not _answers():
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "dockerd did not answer in 60 s"
            time.sleep(0.5)
        yield
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def images(engine: None) -> dict[str, tuple[str, int]]:
    """``{tag: (image id, size in bytes)}`` of the base, sandbox and platform images."""
    done = subprocess.run(
        [str(ROOT / "tools" / "images.sh"), "--public-base"],
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    built = {}
    for line in done.stdout.splitlines():
        tag, image_id, size = line.split()
        built[tag] = (image_id, int(size))
    return built


@pytest.fixture(scope="module")  # stopped after its module: nothing idles beside later tiers
def cluster(
    images: dict[str, tuple[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A real node (``tests/integration/k8s/node.py``) with the chart installed by ``helm
    install`` with default values, as a user would: the images just built, imported under the
    chart's default names. Fails in CI without its binaries (``A01GYM_REQUIRE_NODE=1``)."""
    from realnode import RealCluster

    started = RealCluster(tmp_path_factory.mktemp("node"))
    try:
        started.check()
    except RuntimeError as exc:
        if os.environ.get("A01GYM_REQUIRE_NODE") == "1":
            pytest.fail(f"A01GYM_REQUIRE_NODE=1 but {exc}")
        pytest.skip(str(exc))
    try:
        started.start()
        yield started
    finally:
        started.stop()
