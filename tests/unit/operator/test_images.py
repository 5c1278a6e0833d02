"""The Dockerfiles agree with what runs them (Docker itself cannot run in CI).

The sandbox image must start exactly the process the operator's pod builder asks for, as
the same uid, on the same port, writing only to the pod's emptyDirs; the platform image
must run as the chart's uid with ``a01gym`` as its entrypoint; and the sandbox image must
install every third-party package the supervisor and the app process import, and every
library a scenario app may import (:data:`a01gym.sandbox.inside.preloads.OPTIONAL`).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import yaml
from packaging.requirements import Requirement

from a01gym.operator import builders, labels
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host import container as supervisor
from a01gym.sandbox.inside import preloads

ROOT = Path(__file__).resolve().parents[3]
SANDBOX_DOCKERFILE = ROOT / "sandbox-image" / "Dockerfile"
PLATFORM_DOCKERFILE = ROOT / "Dockerfile"
VALUES = ROOT / "charts" / "a01gym" / "values.yaml"


def _instructions(path: Path, stage: int = -1) -> list[tuple[str, str]]:
    """``(INSTRUCTION, rest)`` pairs of one build stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    stages: list[list[tuple[str, str]]] = [[]]
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stages.append([])
        stages[-1].append((word.upper(), rest.strip()))
    return stages[stage]


def _one(instructions: list[tuple[str, str]], word: str) -> str:
    found = [rest for w, rest in instructions if w == word]
    assert found, f"no {word}"
    return found[-1]


def _env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in instructions:
        if word == "ENV":
            env.update(item.split("=", 1) for item in shlex.split(rest))
    return env


def _pod_container() -> dict:
    settings = OperatorSettings()
    spec = builders.SandboxPodSpec(
        image="img", port=settings.sandbox_port, uid=settings.sandbox_uid
    )
    pod = builders.build_sandbox_pod(
        name="p", namespace="ns", spec=spec, token_secret="p",
        extra_labels={labels.STATE: labels.STATE_IDLE}, owner={}, active_deadline_s=60,
    )  # fmt: skip
    return pod["spec"]["containers"][0]


def test_sandbox_image_runs_the_pod_command_as_the_pod_user() -> None:
    stage = _instructions(SANDBOX_DOCKERFILE)
    container = _pod_container()
    assert json.loads(_one(stage, "ENTRYPOINT")) == container["command"]
    assert json.loads(_one(stage, "CMD")) == container["args"]
    user = _one(stage, "USER")
    uid = container["securityContext"]["runAsUser"]
    assert user == f"{uid}:{container['securityContext']['runAsGroup']}"
    exposed = {int(p.split("/")[0]) for p in _one(stage, "EXPOSE").split()}
    assert {p["containerPort"] for p in container["ports"]} <= exposed
    # `python` in the pod's command must resolve to the venv holding a01gym.
    assert _env(stage)["PATH"].startswith("/opt/a01gym/bin:")


def test_sandbox_image_writes_only_to_the_pods_emptydirs() -> None:
    stage = _instructions(SANDBOX_DOCKERFILE)
    container = _pod_container()
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {supervisor.WORKSPACE_DIR, supervisor.TMP_DIR}
    env = _env(stage)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    for key in ("HOME", "TMPDIR"):
        assert any(env[key] == w or env[key].startswith(w + "/") for w in writable), key
    token_arg = container["args"][container["args"].index("--token-file") + 1]
    assert token_arg.startswith(supervisor.TOKEN_DIR + "/")
    dir_arg = container["args"][container["args"].index("--dir") + 1]
    assert dir_arg.startswith(supervisor.WORKSPACE_DIR + "/")


def _closure(names: list[str]) -> set[str]:
    """Distributions reachable from ``names`` through their unconditional requirements."""
    seen: set[str] = set()
    todo = [n.lower().replace("_", "-") for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for raw in metadata.requires(name) or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name.lower().replace("_", "-"))
    return seen


def test_sandbox_image_installs_what_the_supervisor_imports() -> None:
    stage = _instructions(SANDBOX_DOCKERFILE, stage=1)
    run = " ".join(rest for word, rest in stage if word == "RUN")
    installed = [Requirement(r).name for r in re.findall(r'"([A-Za-z0-9_.\-]+[<>=!~][^"]*)"', run)]
    assert "--no-deps ." in run, "a01gym itself goes in without its CLI/LLM dependencies"
    closure = _closure(installed)
    probe = (
        "import sys, a01gym.sandbox.inside.control, a01gym.sandbox.inside.app_process;"
        "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    owners = metadata.packages_distributions()
    # Imported only when present (uvicorn extras, anyio's sniffio fallback, FastAPI's and
    # pydantic's optional encoders and validators).
    optional = {
        *("watchfiles", "python-multipart", "httptools", "websockets", "sniffio"),
        *("orjson", "ujson", "email-validator"),
    }
    missing = []
    for module in out.split():
        if module in sys.stdlib_module_names or module.startswith("_") or module == "a01gym":
            continue
        dists = {d.lower().replace("_", "-") for d in owners.get(module, [])}
        if dists and not dists & (closure | optional):
            missing.append(f"{module} ({', '.join(sorted(dists))})")
    assert not missing, f"the sandbox image lacks {missing}"
    # Scenario apps import these (the zygote preloads them once an app does): the ORM style.
    for name in preloads.OPTIONAL:
        assert {d.lower() for d in owners[name]} & closure, f"the sandbox image lacks {name}"


def test_platform_image_matches_the_chart() -> None:
    stage = _instructions(PLATFORM_DOCKERFILE)
    values = yaml.safe_load(VALUES.read_text())
    assert json.loads(_one(stage, "ENTRYPOINT")) == ["a01gym"]
    uid = values["podSecurityContext"]["runAsUser"]
    assert _one(stage, "USER") == f"{uid}:{values['podSecurityContext']['runAsGroup']}"
    build = " ".join(rest for word, rest in _instructions(PLATFORM_DOCKERFILE, 1) if word == "RUN")
    assert '".[${EXTRAS}]"' in build
    assert "ARG EXTRAS=k8s,eval" in PLATFORM_DOCKERFILE.read_text()  # the default image
    assert _env(stage)["HOME"].startswith("/tmp")
    # The chart's default images are the ones the Dockerfiles' headers say to build.
    assert f"-t {values['image']['repository']}:" in PLATFORM_DOCKERFILE.read_text()
    sandbox_repo = values["sandbox"]["image"]["repository"]
    assert f"-t {sandbox_repo}:" in SANDBOX_DOCKERFILE.read_text()
    assert OperatorSettings().default_image.startswith(sandbox_repo + ":")


def test_dockerignore_keeps_only_the_build_inputs() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in lines
    assert {"!pyproject.toml", "!README.md", "!src/"} <= set(lines)


def test_the_openenv_image_builds_in_the_platform_images_build_stage() -> None:
    """``openenv validate .`` builds deploy/openenv/Dockerfile; with the same build stage, an
    engine that built the platform image serves it from its layer cache."""
    openenv = ROOT / "deploy" / "openenv" / "Dockerfile"
    assert _instructions(openenv, stage=1) == _instructions(PLATFORM_DOCKERFILE, stage=1)
    assert _instructions(openenv, stage=0) == _instructions(PLATFORM_DOCKERFILE, stage=0)
