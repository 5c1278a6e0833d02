"""The images ``make images`` builds here, on a real Docker engine.

The platform image runs the ``a01gym`` command; the sandbox image starts exactly the process,
user and paths that the operator's sandbox pod and the Docker backend's container ask for.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from a01gym import __version__
from a01gym.backend_settings import DockerBackendSettings
from a01gym.operator import builders, labels
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host import docker_engine

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]  # the first build takes minutes

SANDBOX = f"a01gym/sandbox:{__version__}"
PLATFORM = f"a01gym/a01gym:{__version__}"


def _image(ref: str) -> dict:
    done = subprocess.run(
        ["docker", "image", "inspect", ref], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)[0]


def test_both_images_build_and_the_platform_image_runs_its_command(
    images: dict[str, tuple[str, int]],
) -> None:
    assert {SANDBOX, PLATFORM} <= set(images)
    (base,) = [tag for tag in images if tag.startswith("a01gym/python-base:")]
    printed = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", PLATFORM, "version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert printed.stdout.strip() == __version__
    # the sandbox image carries the supervisor's dependencies only, not the platform's
    assert images[base][1] < images[SANDBOX][1] < images[PLATFORM][1]
    print(f"sizes (MB): { {tag: round(size / 1e6) for tag, (_, size) in images.items()} }")


def test_sandbox_image_runs_what_the_pod_and_the_docker_backend_run(
    images: dict[str, tuple[str, int]],
) -> None:
    config = _image(SANDBOX)["Config"]
    settings = OperatorSettings()
    pod = builders.build_sandbox_pod(
        name="p", namespace="ns",
        spec=builders.SandboxPodSpec(SANDBOX, port=settings.sandbox_port, uid=settings.sandbox_uid),
        token_secret="p", extra_labels={labels.STATE: labels.STATE_IDLE}, owner={},
        active_deadline_s=60,
    )["spec"]["containers"][0]  # fmt: skip
    body = docker_engine.container_config(DockerBackendSettings(), token_dir=Path("/t"), labels={})
    host = body["HostConfig"]
    assert config["Entrypoint"] == pod["command"] == body["Entrypoint"]
    assert config["Cmd"] == pod["args"] == body["Cmd"]
    security = pod["securityContext"]
    assert config["User"] == body["User"] == f"{security['runAsUser']}:{security['runAsGroup']}"
    assert f"{pod['ports'][0]['containerPort']}/tcp" in config["ExposedPorts"]
    writable = {m["mountPath"] for m in pod["volumeMounts"] if not m.get("readOnly")}
    read_only = {m["mountPath"] for m in pod["volumeMounts"] if m.get("readOnly")}
    assert set(config["Volumes"]) == writable == set(host["Tmpfs"])
    assert {bind.split(":")[1] for bind in host["Binds"]} == read_only
    assert all(bind.endswith(":ro") for bind in host["Binds"])
    assert host["ReadonlyRootfs"] is security["readOnlyRootFilesystem"] is True
    assert host["CapDrop"] == security["capabilities"]["drop"] == ["ALL"]
    assert security["allowPrivilegeEscalation"] is False
    assert host["SecurityOpt"] == ["no-new-privileges"]  # and the engine's default seccomp
