"""``openenv validate``'s runtime level on a real Docker engine, through openenv's own provider.

openenv's Docker provider builds ``deploy/openenv/Dockerfile`` (unchanged: its base is the
local stand-in ``tools/images.sh --public-base`` tags), runs it with ``--network none``, a
read-only root and uid 65532, and reaches it through a helper container that joins its network
namespace. The helper image must be pinned by digest; openenv pins
``python:3.12-slim@sha256:…``, which only a registry can supply, and no registry is reachable
here. So the one thing changed is the helper image: our own base image, pushed to a registry
on loopback (Debian's ``docker-registry``) to get a real digest. Everything else is the
provider ``openenv validate .`` uses.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from openenv.validation import Level, load_policy, run_validation
from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser
from openenv.validation.providers.docker import DockerValidationProvider
from openenv.validation.runner import default_grader_registry

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parents[3]
NOT_IMPLEMENTED = "grader not implemented in this build"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _dangling_images() -> set[str]:
    listed = subprocess.run(
        ["docker", "images", "--quiet", "--no-trunc", "--filter", "dangling=true"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(listed.stdout.split())


@pytest.fixture(scope="module")
def helper_image(
    images: dict[str, tuple[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Our base image, pinned by the digest a registry on loopback gave it."""
    if shutil.which("docker-registry") is None:
        if os.environ.get("A01GYM_REQUIRE_DOCKER") == "1":
            pytest.fail("A01GYM_REQUIRE_DOCKER=1 but no docker-registry (apt-get install it)")
        pytest.skip("no docker-registry (apt-get install docker-registry)")
    (base,) = [tag for tag in images if tag.startswith("a01gym/python-base:")]
    work = tmp_path_factory.mktemp("registry")
    address = f"127.0.0.1:{_free_port()}"
    pushed = f"{address}/a01gym/python-base:helper"  # untagged again at the end
    (work / "config.yml").write_text(
        f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {work / 'data'}\n"
        f"http:\n  addr: {address}\n"
    )
    with (work / "registry.log").open("wb") as log:
        registry = subprocess.Popen(
            ["docker-registry", "serve", str(work / "config.yml")],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(tuple(address.split(":")), timeout=1).close()  # type: ignore[arg-type]
                break
            except OSError:
                assert time.monotonic() < deadline, (work / "registry.log").read_text()
                time.sleep(0.2)
        subprocess.run(["docker", "tag", base, pushed], check=True, timeout=60)
        subprocess.run(["docker", "push", pushed], check=True, timeout=300, capture_output=True)
        inspected = subprocess.run(
            ["docker", "image", "inspect", pushed],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        (digest,) = [d for d in json.loads(inspected.stdout)[0]["RepoDigests"] if address in d]
        yield digest
    finally:
        subprocess.run(["docker", "image", "rm", pushed], capture_output=True, check=False)
        registry.terminate()
        registry.wait(30)


# openenv's collector opens its WebSocket the way websockets 17.1 deprecated (not our code)
@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")
def test_every_runtime_grader_openenv_implements_passes_on_the_real_engine(
    helper_image: str,
) -> None:
    provider = DockerValidationProvider(helper_image=helper_image)
    before = _dangling_images()
    try:
        report = run_validation(ROOT, max_level=Level.RUNTIME, provider=provider)
    finally:
        # openenv's provider builds an untagged image (~0.7 GB) and leaves it behind
        for image in _dangling_images() - before:
            subprocess.run(["docker", "image", "rm", image], capture_output=True, check=False)
    results = {r.check_id: r for r in report.results}
    manifest = OpenEnvYamlParser().parse(ROOT)
    implemented = {
        g.check_id
        for g in default_grader_registry(load_policy("v2")).select(manifest, Level.RUNTIME)
    }
    assert implemented == {
        "static.manifest",
        "runtime.network_policy",
        "runtime.observation_schema",
        "runtime.reward_well_formed",
        "runtime.state_contract",
    }, "openenv added graders: check them here"
    for check_id in ["runtime.startup", *sorted(implemented)]:
        result = results[check_id]
        assert result.status.value == "pass", (check_id, result.evidence)
    others = [r for r in report.results if r.check_id not in implemented | {"runtime.startup"}]
    assert others and all(r.evidence == [NOT_IMPLEMENTED] for r in others)
    assert report.verdict.value == "warn"  # PASS plus SKIPs for graders openenv lacks
    leftovers = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "name=openenv-validation"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert leftovers.stdout.strip() == ""  # the provider removed what it ran
