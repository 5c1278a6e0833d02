"""The process kubelet's pod runtime (``podrun.py``) applies what the sandbox pod spec says,
so a sandbox that needs root, a capability or a writable root fails the Kubernetes tests.

No apiserver needed: the pod is the operator's own builder's output, run under bubblewrap.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import podrun
import pytest

from a01gym.operator import builders

_REPORT = """
import json, os
def attempt(path):
    try:
        open(path, "w").close()
        return "written"
    except OSError as exc:
        return exc.strerror
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
tmp = os.statvfs("/tmp")
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(),
    "cap_eff": status["CapEff"].strip(), "cap_bnd": status["CapBnd"].strip(),
    "root": attempt("/escape"), "venv": attempt(os.path.join(os.path.dirname(os.__file__), "x")),
    "workspace": attempt("/sandbox/file"), "tmp": attempt("/tmp/file"),
    "tmp_bytes": tmp.f_blocks * tmp.f_frsize,
    "token": open("/var/run/a01gym/token").read(),
    # Python sets LC_CTYPE itself under the C locale (PEP 538); bwrap's --chdir sets PWD
    "env": sorted(k for k in os.environ if k not in ("LC_CTYPE", "PWD")),
}))
"""


def _pod() -> dict[str, Any]:
    return builders.build_sandbox_pod(
        name="pod", namespace="ns", spec=builders.SandboxPodSpec(image="sandbox:test"),
        token_secret="pod", extra_labels={}, owner={}, active_deadline_s=60,
    )  # fmt: skip


def _run(pod: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    token = tmp_path / "token"
    token.mkdir()
    (token / "token").write_text("sandbox-token")
    (token / "token").chmod(0o440)
    (container,) = pod["spec"]["containers"]
    command = podrun.bwrap_argv(
        pod["spec"], container, [sys.executable, "-c", _REPORT],
        env={"APP_MODE": "test"}, binds={"/var/run/a01gym": token},
    )  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_a_sandbox_pod_runs_as_its_uid_without_capabilities_on_a_read_only_root(
    tmp_path: Path,
) -> None:
    report = _run(_pod(), tmp_path)
    assert (report["uid"], report["gid"]) == (10001, 10001)
    assert report["cap_eff"] == report["cap_bnd"] == "0000000000000000"
    assert report["root"] == report["venv"] == "Read-only file system"
    assert report["workspace"] == report["tmp"] == "written"  # the emptyDirs
    assert report["tmp_bytes"] == podrun.quantity_bytes("64Mi")  # the emptyDir's sizeLimit
    assert report["token"] == "sandbox-token"  # the Secret volume, read-only at its mountPath
    assert report["env"] == ["APP_MODE", "HOSTNAME", "PATH"]  # only the pod's (and a kubelet's)


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("securityContext", {"runAsUser": 0}),
        ("securityContext", {"runAsNonRoot": False}),
        ("securityContext", {"readOnlyRootFilesystem": False}),
        ("securityContext", {"allowPrivilegeEscalation": True}),
        ("securityContext", {"capabilities": {"drop": []}}),
    ],
)
def test_a_pod_asking_for_root_or_a_writable_root_is_refused(
    where: str, change: dict[str, Any]
) -> None:
    pod = _pod()
    (container,) = pod["spec"]["containers"]
    container[where] = {**container[where], **change}
    with pytest.raises(RuntimeError, match=r"root|privileges"):
        podrun.bwrap_argv(pod["spec"], container, ["true"], env={})
