"""Pure manifest builders: plain dicts in, plain dicts out, no I/O and no clock.

Everything the operator sends to the API server is shaped here, so the hardening of sandbox
pods, the claim patch and the status layout can be unit-tested without a cluster. Callers
pass the time in (``now``) for the same reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from a01gym.operator import labels
from a01gym.sandbox.host import container as supervisor
from a01gym.sandbox.host.kubernetes import GROUP, VERSION

__all__ = [
    "SandboxPodSpec",
    "build_claim_patch",
    "build_condition",
    "build_event",
    "build_owner_reference",
    "build_pool_status",
    "build_sandbox_network_policy",
    "build_sandbox_pod",
    "build_token_secret",
]


@dataclasses.dataclass(frozen=True)
class SandboxPodSpec:
    """What varies between sandbox pods (the rest is fixed hardening)."""

    image: str
    port: int = supervisor.PORT
    uid: int = supervisor.UID
    resources: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    runtime_class_name: str | None = None
    image_pull_policy: str = "IfNotPresent"
    workspace_size_limit: str = supervisor.WORKSPACE_SIZE
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def build_owner_reference(
    kind: str, name: str, uid: str, *, api_version: str = f"{GROUP}/{VERSION}"
) -> dict[str, Any]:
    """A controller ownerReference, so garbage collection follows the owner.

    ``blockOwnerDeletion`` stays unset: setting it needs update rights on the owner's
    finalizers, which the operator's least-privilege role does not grant.
    """
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def build_sandbox_pod(
    *,
    name: str,
    namespace: str,
    spec: SandboxPodSpec,
    token_secret: str,
    extra_labels: Mapping[str, str],
    owner: Mapping[str, Any],
    active_deadline_s: int,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A hardened sandbox pod running the supervisor.

    Non-root with a fixed uid, read-only root filesystem (the workspace and /tmp are
    size-limited emptyDirs), no service-account token, every capability dropped, seccomp
    RuntimeDefault, no privilege escalation, resource limits, a hard
    ``activeDeadlineSeconds``, and the token mounted read-only from its own Secret.
    User-supplied labels cannot override the operator's ``a01gym.dev/`` labels.
    """
    overrides = dict(spec.overrides)
    user_labels = {
        k: v for k, v in (overrides.get("labels") or {}).items() if not k.startswith(labels.PREFIX)
    }
    pod_labels = {
        **user_labels,
        **extra_labels,
        labels.COMPONENT: labels.COMPONENT_SANDBOX,
        labels.MANAGED_BY: labels.MANAGED_BY_VALUE,
    }
    resources = {k: dict(v) for k, v in spec.resources.items() if v}
    container = {
        "name": "supervisor",
        "image": spec.image,
        "imagePullPolicy": overrides.get("imagePullPolicy", spec.image_pull_policy),
        "command": list(supervisor.COMMAND),
        "args": supervisor.args(spec.port),
        "ports": [{"name": "control", "containerPort": spec.port, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": "control"},
            "periodSeconds": 2,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        },
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": spec.uid,
            "runAsGroup": spec.uid,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "workspace", "mountPath": supervisor.WORKSPACE_DIR},
            {"name": "tmp", "mountPath": supervisor.TMP_DIR},
            {"name": "token", "mountPath": supervisor.TOKEN_DIR, "readOnly": True},
        ],
    }
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "hostNetwork": False,
        "hostPID": False,
        "hostIPC": False,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 5,
        "activeDeadlineSeconds": active_deadline_s,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": spec.uid,
            "runAsGroup": spec.uid,
            "fsGroup": spec.uid,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": [
            {"name": "workspace", "emptyDir": {"sizeLimit": spec.workspace_size_limit}},
            {"name": "tmp", "emptyDir": {"sizeLimit": supervisor.TMP_SIZE}},
            {
                "name": "token",
                "secret": {
                    "secretName": token_secret,
                    "defaultMode": 0o440,
                    "items": [{"key": supervisor.TOKEN_KEY, "path": supervisor.TOKEN_KEY}],
                },
            },
        ],
    }
    runtime_class = spec.runtime_class_name or overrides.get("runtimeClassName")
    if runtime_class:
        pod_spec["runtimeClassName"] = runtime_class
    for key in (
        "nodeSelector",
        "tolerations",
        "affinity",
        "priorityClassName",
        "serviceAccountName",
        "imagePullSecrets",
    ):
        if overrides.get(key):
            pod_spec[key] = overrides[key]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": pod_labels,
            "annotations": {**(overrides.get("annotations") or {}), **(annotations or {})},
            "ownerReferences": [dict(owner)],
        },
        "spec": pod_spec,
    }


def build_token_secret(
    *, name: str, namespace: str, token: str, pod_name: str, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The Secret holding one sandbox's supervisor token: owned by ``owner`` if it exists
    already (a cold pod's Episode), else given its pod as owner once the pod exists."""
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                labels.COMPONENT: labels.COMPONENT_TOKEN,
                labels.TOKEN_OF_POD: pod_name,
                labels.MANAGED_BY: labels.MANAGED_BY_VALUE,
            },
        },
        "immutable": True,
        "stringData": {supervisor.TOKEN_KEY: token},
    }
    if owner is not None:
        secret["metadata"]["ownerReferences"] = [{**owner, "controller": False}]
    return secret


def build_claim_patch(
    *,
    resource_version: str,
    episode_name: str,
    episode_uid: str,
    now: str,
    active_deadline_s: int | None,
) -> dict[str, Any]:
    """Merge patch that binds an idle pool pod to an Episode.

    ``metadata.resourceVersion`` makes it an optimistic-lock write: the API server answers
    409 if anyone changed the pod since we read it, so two claims can never both win. The
    ownerReference moves from the pool to the Episode (merge patch replaces the list).
    """
    patch: dict[str, Any] = {
        "metadata": {
            "resourceVersion": resource_version,
            "labels": {labels.STATE: labels.STATE_CLAIMED, labels.EPISODE_UID: episode_uid},
            "annotations": {
                labels.ANNOTATION_EPISODE_NAME: episode_name,
                labels.ANNOTATION_CLAIMED_TIME: now,
            },
            "ownerReferences": [build_owner_reference("Episode", episode_name, episode_uid)],
        }
    }
    if active_deadline_s is not None:
        patch["spec"] = {"activeDeadlineSeconds": active_deadline_s}
    return patch


def build_condition(
    *,
    type_: str,
    status: bool,
    reason: str,
    message: str,
    generation: int,
    now: str,
    previous: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The conditions list with ``type_`` set; ``lastTransitionTime`` moves only on a flip."""
    value = "True" if status else "False"
    old = next((c for c in previous or [] if c.get("type") == type_), None)
    since = old["lastTransitionTime"] if old and old.get("status") == value else now
    others = [c for c in previous or [] if c.get("type") != type_]
    return [
        *others,
        {
            "type": type_,
            "status": value,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": since,
        },
    ]


def build_pool_status(
    *, idle: int, ready: int, claimed: int, pool_name: str, generation: int
) -> dict[str, Any]:
    """SandboxPool status; ``replicas``/``selector`` back the scale subresource."""
    selector = f"{labels.POOL}={pool_name},{labels.STATE}={labels.STATE_IDLE}"
    return {
        "replicas": idle,
        "readyReplicas": ready,
        "idle": idle,
        "claimed": claimed,
        "selector": selector,
        "observedGeneration": generation,
    }


def build_event(
    *,
    involved: Mapping[str, Any],
    type_: str,
    reason: str,
    message: str,
    now: str,
    suffix: str,
) -> dict[str, Any]:
    """A core/v1 Event about ``involved`` (an Episode or SandboxPool body)."""
    meta = involved["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{suffix}", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", f"{GROUP}/{VERSION}"),
            "kind": involved.get("kind", "Episode"),
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": labels.MANAGED_BY_VALUE},
        "reportingComponent": labels.MANAGED_BY_VALUE,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def build_sandbox_network_policy(
    *,
    name: str,
    namespace: str,
    port: int,
    allowed_from: list[Mapping[str, str]],
) -> dict[str, Any]:
    """Deny all egress from sandbox pods; admit ingress only from ``allowed_from`` pods.

    ``allowed_from`` are pod label selectors (the gateway, and the operator for its health
    checks), matched in the sandbox namespace, on the supervisor port only.
    """
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "podSelector": {"matchLabels": dict(labels.SANDBOX_SELECTOR)},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": dict(s)}} for s in allowed_from],
                    "ports": [{"protocol": "TCP", "port": port}],
                }
            ],
            "egress": [],
        },
    }
