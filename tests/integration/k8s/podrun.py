"""Run a container of a rendered pod the way a cluster would, with bubblewrap, unprivileged.

What the pod spec asks for is applied, not trusted: the pod's ``runAsUser``/``runAsGroup``
(in a user namespace), every capability dropped, a read-only root (every top-level directory
of the host bound read-only, the new root remounted read-only), a fresh tmpfs for each
emptyDir (its ``sizeLimit`` as the tmpfs size), the volumes the caller materialised (PVCs,
Secrets, ConfigMaps) bound at their ``mountPath`` (read-only when the mount says so), only the
container's own env (plus what a kubelet adds: PATH, HOSTNAME) and its args, in fresh PID, IPC
and UTS namespaces. ``network="none"`` adds a network namespace of its own (loopback only),
so a container that binds 0.0.0.0 reaches nothing outside. The host's ``/tmp`` is not part of
the image; a checkout or Python environment that lives there is bound in read-only, as an
image would carry it.

A container that needs root, a capability or a writable root filesystem fails here as it
would on a cluster with Pod Security "restricted". Not applied: cgroup limits (CPU, memory)
and seccomp. The tests run as root, so the pod's uid maps onto host uid 0 outside its user
namespace: it owns host files in name only (every host directory is bound read-only and it
holds no capability).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

__all__ = ["bwrap_argv", "emptydir_mounts", "quantity_bytes"]

_SKIP_TOP = {"proc", "dev", "sys", "tmp", "run"}
_CHECKOUT = Path(__file__).resolve().parents[3]


def _root_binds() -> list[str]:
    argv: list[str] = []
    for entry in sorted(Path("/").iterdir()):
        if entry.name in _SKIP_TOP or entry.name.startswith("."):
            continue
        if entry.is_symlink():
            argv += ["--symlink", os.readlink(entry), str(entry)]
        elif entry.is_dir():
            argv += ["--ro-bind", str(entry), str(entry)]
    return argv


def _image_binds() -> list[str]:
    """The "image" the root binds miss: this checkout and the Python environment, when they
    live under a directory a pod gets fresh (a clone in /tmp), bound read-only where they are;
    last, so that a pod's own tmpfs on /tmp does not hide them."""
    argv: list[str] = []
    for path in sorted({str(_CHECKOUT), sys.prefix, sys.base_prefix}):
        if Path(path).parts[1:2] and Path(path).parts[1] in _SKIP_TOP:
            argv += ["--ro-bind", path, path]
    return argv


_UNITS = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "K": 1000, "M": 1000**2, "G": 1000**3}


def quantity_bytes(quantity: str | int) -> int:
    """A Kubernetes memory quantity (``64Mi``, ``2Gi``, ``1000``) in bytes."""
    text = str(quantity)
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * _UNITS[unit])
    return int(text)


def _inside(path: str) -> str:
    """``path`` with its longest existing host prefix resolved: the new root holds the host's
    symlinks (``/var/run`` -> ``/run``), and bwrap must mount onto their targets."""
    head, tail = Path(path), []
    while not head.exists() and head != head.parent:
        head, tail = head.parent, [head.name, *tail]
    return str(Path(os.path.realpath(head), *tail))


def emptydir_mounts(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, int | None]:
    """The mountPaths of ``container`` whose volume is an emptyDir, with its sizeLimit
    in bytes (None: unlimited)."""
    empty = {v["name"]: v["emptyDir"] for v in pod.get("volumes", []) if "emptyDir" in v}
    return {
        m["mountPath"]: quantity_bytes(limit)
        if (limit := (empty[m["name"]] or {}).get("sizeLimit"))
        else None
        for m in container.get("volumeMounts", [])
        if m["name"] in empty
    }


def bwrap_argv(
    pod: dict[str, Any],
    container: dict[str, Any],
    argv: list[str],
    *,
    env: dict[str, str],
    binds: dict[str, Path] | None = None,
    network: Literal["host", "none"] = "host",
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` as ``container`` of ``pod``.

    Args:
        pod: the pod spec (``securityContext``, ``volumes``).
        container: the container spec (``securityContext``, ``volumeMounts``, ``workingDir``).
        argv: the command (the image's entrypoint resolved to a host path, then the args).
        env: the container's environment, already resolved (values from Secrets included).
        binds: host directories for the non-emptyDir volumes, by mountPath.
        network: ``host`` shares the host's network (pod IPs on loopback); ``none`` gives the
            container a loopback of its own.

    Raises:
        RuntimeError: bwrap is missing, or the pod asks to run as root.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bubblewrap (bwrap) is not installed")
    pod_sc = pod.get("securityContext") or {}
    sc = {**pod_sc, **(container.get("securityContext") or {})}
    uid, gid = sc.get("runAsUser"), sc.get("runAsGroup", sc.get("runAsUser"))
    if uid in (None, 0) or not sc.get("runAsNonRoot", False):
        raise RuntimeError(f"container {container['name']} would run as root: {sc}")
    if sc.get("allowPrivilegeEscalation", True) or "ALL" not in (
        (sc.get("capabilities") or {}).get("drop") or []
    ):
        raise RuntimeError(f"container {container['name']} keeps privileges: {sc}")
    out = [bwrap, "--unshare-user", "--uid", str(uid), "--gid", str(gid)]
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
    out += ["--cap-drop", "ALL", "--new-session"]
    if network == "none":
        out.append("--unshare-net")
    out += _root_binds()
    out += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]  # /run: the image's, empty
    if not sc.get("readOnlyRootFilesystem", False):
        raise RuntimeError(f"container {container['name']} wants a writable root: {sc}")
    readonly = {m["mountPath"] for m in container.get("volumeMounts", []) if m.get("readOnly")}
    for path, size in emptydir_mounts(pod, container).items():
        # owned by the pod's uid (like an fsGroup-owned emptyDir), as big as its sizeLimit
        out += [*(["--size", str(size)] if size else []), "--tmpfs", _inside(path)]
    for path, host in sorted((binds or {}).items()):
        out += ["--ro-bind" if path in readonly else "--bind", str(host), _inside(path)]
    out += _image_binds()
    out += ["--remount-ro", "/"]
    out += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"]
    out += ["--setenv", "HOSTNAME", pod.get("metadata", {}).get("name", "pod")]
    for name, value in env.items():
        out += ["--setenv", name, value]
    out += ["--chdir", container.get("workingDir") or "/"]
    return [*out, "--", *argv]
