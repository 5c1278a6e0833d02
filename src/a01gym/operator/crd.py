"""The CustomResourceDefinitions (``Episode``, ``SandboxPool``): the single source of truth.

The chart's ``crds/`` files are generated from here (``a01gym operator crds``) and a test keeps
them identical. Schemas are structural, every field is typed, and unknown fields are pruned
or rejected, so a typo in ``kubectl apply`` fails at admission instead of silently doing
nothing. Kopf keeps no state in these objects (the operator only uses event handlers), so no
``x-kubernetes-preserve-unknown-fields`` escape hatch is needed in ``status``.
"""

from __future__ import annotations

from typing import Any

from a01gym.sandbox.host.kubernetes import EPISODES, GROUP, SANDBOXPOOLS, VERSION

__all__ = [
    "EPISODE_PHASES",
    "all_crds",
    "build_episode_crd",
    "build_sandboxpool_crd",
]

EPISODE_PHASES = ("Pending", "Binding", "Ready", "Finished", "Failed", "Expired")
"""Convenience summary for printer columns; the ``Ready`` condition is authoritative."""

_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 253,
    "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
}
_TIME = {"type": "string", "format": "date-time"}
_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}
_RESOURCE_MAP = {
    "type": "object",
    "properties": {"cpu": _QUANTITY, "memory": _QUANTITY, "ephemeral-storage": _QUANTITY},
}
_RESOURCES = {
    "type": "object",
    "description": "Requests and limits of the sandbox container (cpu, memory, "
    "ephemeral-storage). Setting them on an Episode forces a cold pod unless they equal "
    "the pool's.",
    "properties": {"requests": _RESOURCE_MAP, "limits": _RESOURCE_MAP},
}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}


def _conditions() -> dict[str, Any]:
    return {
        "type": "array",
        "description": "Latest observations; Ready is the source of truth.",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type", "status", "lastTransitionTime", "reason", "message"],
            "properties": {
                "type": {"type": "string", "maxLength": 316},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "lastTransitionTime": _TIME,
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                },
                "message": {"type": "string", "maxLength": 32768},
            },
        },
    }


def _crd(
    *,
    kind: str,
    plural: str,
    short_names: list[str],
    schema: dict[str, Any],
    columns: list[dict[str, Any]],
    subresources: dict[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": ["a01gym"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources,
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }


def build_episode_crd() -> dict[str, Any]:
    """The ``Episode`` CRD: one sandbox for one agent episode."""
    spec = {
        "type": "object",
        "description": "Intent: which scenario, where to get a sandbox, for how long.",
        "properties": {
            "scenarioHash": {
                "type": "string",
                "description": "Content hash (sha256 hex) of the scenario bundle to load.",
                "pattern": "^[0-9a-f]{64}$",
            },
            "poolRef": {
                "type": "object",
                "description": "SandboxPool to claim a warm pod from; cold pod when absent.",
                "required": ["name"],
                "properties": {"name": _NAME},
            },
            "ttlSeconds": {
                "type": "integer",
                "description": "Lifetime from creation; then the sandbox is deleted (Expired).",
                "minimum": 10,
                "maximum": 86400,
                "default": 3600,
            },
            "resources": _RESOURCES,
            "runtimeClassName": {
                "type": "string",
                "description": "RuntimeClass for the sandbox pod (e.g. gvisor); forces a "
                "cold pod unless it equals the pool's.",
                "maxLength": 253,
                "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
            },
        },
    }
    status = {
        "type": "object",
        "description": "Observation, written only by the operator.",
        "properties": {
            "phase": {"type": "string", "enum": list(EPISODE_PHASES)},
            "conditions": _conditions(),
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "podName": {"type": "string"},
            "endpoint": {"type": "string", "description": "host:port of the supervisor."},
            "tokenSecretName": {
                "type": "string",
                "description": "Secret (key 'token') holding the supervisor's bearer token.",
            },
            "sandboxSource": {"type": "string", "enum": ["Warm", "Cold"]},
            "createdTime": _TIME,
            "readyTime": _TIME,
            "finishedTime": _TIME,
            "expireTime": _TIME,
        },
    }
    schema = {
        "type": "object",
        "description": "A sandbox for one agent episode: a warm pool pod or a cold pod.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    ready = '.status.conditions[?(@.type=="Ready")]'
    columns = [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Ready", "type": "string", "jsonPath": f"{ready}.status"},
        {"name": "Reason", "type": "string", "jsonPath": f"{ready}.reason"},
        {"name": "Pod", "type": "string", "jsonPath": ".status.podName"},
        {"name": "Endpoint", "type": "string", "jsonPath": ".status.endpoint", "priority": 1},
        {"name": "Pool", "type": "string", "jsonPath": ".spec.poolRef.name", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd(
        kind="Episode",
        plural=EPISODES,
        short_names=["ep", "eps"],
        schema=schema,
        columns=columns,
        subresources={"status": {}},
    )


def build_sandboxpool_crd() -> dict[str, Any]:
    """The ``SandboxPool`` CRD: warm, idle, hardened sandbox pods ready to be claimed."""
    overrides = {
        "type": "object",
        "description": "Scheduling and metadata overrides for the pool's pods.",
        "properties": {
            "labels": _STRING_MAP,
            "annotations": _STRING_MAP,
            "nodeSelector": _STRING_MAP,
            "runtimeClassName": {"type": "string", "maxLength": 253},
            "priorityClassName": {"type": "string", "maxLength": 253},
            "serviceAccountName": {"type": "string", "maxLength": 253},
            "imagePullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]},
            "imagePullSecrets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}},
                },
            },
            "tolerations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string", "enum": ["Exists", "Equal"]},
                        "value": {"type": "string"},
                        "effect": {"type": "string"},
                        "tolerationSeconds": {"type": "integer", "format": "int64"},
                    },
                },
            },
            "affinity": {
                "type": "object",
                "description": "A core/v1 Affinity, passed through unchanged.",
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
    }
    spec = {
        "type": "object",
        "description": "Intent: how many idle sandbox pods to keep, and what they run.",
        "required": ["image"],
        "properties": {
            "replicas": {
                "type": "integer",
                "description": "Idle pods to keep ready (claimed pods are replaced).",
                "minimum": 0,
                "maximum": 10000,
                "default": 1,
            },
            "image": {
                "type": "string",
                "description": "Sandbox image (sandbox-image/), running the supervisor.",
                "minLength": 1,
            },
            "resources": _RESOURCES,
            "podOverrides": overrides,
        },
    }
    status = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "description": "Idle pods (scale subresource)."},
            "readyReplicas": {"type": "integer", "description": "Idle pods that are Ready."},
            "idle": {"type": "integer"},
            "claimed": {"type": "integer", "description": "Pods bound to Episodes."},
            "selector": {"type": "string", "description": "Label selector of idle pods."},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "conditions": _conditions(),
        },
    }
    schema = {
        "type": "object",
        "description": "A warm pool of idle sandbox pods that Episodes claim.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    columns = [
        {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
        {"name": "Idle", "type": "integer", "jsonPath": ".status.idle"},
        {"name": "Claimed", "type": "integer", "jsonPath": ".status.claimed"},
        {"name": "Image", "type": "string", "jsonPath": ".spec.image", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    scale = {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    return _crd(
        kind="SandboxPool",
        plural=SANDBOXPOOLS,
        short_names=["sbp", "pool"],
        schema=schema,
        columns=columns,
        subresources={"status": {}, "scale": scale},
    )


def all_crds() -> list[dict[str, Any]]:
    """Both CRDs, in install order."""
    return [build_episode_crd(), build_sandboxpool_crd()]
