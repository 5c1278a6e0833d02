"""Thin kopf handlers, named ``<kind>_<event>``: each hands its event to the reconciler.

Only event handlers are used, never kopf's change-detecting handlers, so kopf writes no
finalizers, progress annotations or last-handled-configuration into our objects: the state
lives in ``status`` and in pod labels, where a restarted operator (or a human with kubectl)
can read it. No Episode is reconciled against a half-loaded view of the pods: the startup
handler primes the store from a LIST before kopf starts any watch. (A kopf index on pods did
that job before, at the price of a second store update per pod event: ~5% of the operator's
CPU in a burst.)
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from a01gym.operator import labels
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator.reconciler import Reconciler
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kube_client import KubeClient
from a01gym.sandbox.host.kube_credentials import KubeCredentials
from a01gym.sandbox.host.kubernetes import EPISODES, GROUP, SANDBOXPOOLS, VERSION

__all__ = [
    "episode_event",
    "operator_cleanup",
    "operator_login",
    "operator_probe",
    "operator_startup",
    "pod_event",
    "sandboxpool_event",
]

logger = logging.getLogger(__name__)

_SANDBOX_PODS = {labels.COMPONENT: labels.COMPONENT_SANDBOX}


class _NoDiffBase(kopf.DiffBaseStorage):
    """No diff base: with event handlers only, kopf never uses one, yet it would deep-copy
    every watched object to build it (a tenth of the operator's CPU in a 10,000-Episode
    burst). Nothing is stored, so nothing is ever written into our objects either."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> Any:
        return {}

    def fetch(self, *, body: kopf.Body) -> None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: Any) -> None:
        return None


def _settings(memo: Any) -> OperatorSettings:
    return memo["operator_settings"]


@kopf.on.login()
def operator_login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
    """Log kopf in with the same credentials as our own client (no KUBECONFIG-at-import trap)."""
    creds = KubeCredentials.load(_settings(memo).kubeconfig)
    return kopf.ConnectionInfo(
        server=creds.server,
        ca_data=creds.ca_data.encode() if creds.ca_data else None,
        insecure=creds.insecure,
        scheme="Bearer" if creds.bearer() else None,
        token=creds.bearer(),
        certificate_data=creds.cert_data,
        private_key_data=creds.key_data,
        default_namespace=_settings(memo).namespace,
    )


@kopf.on.startup()
async def operator_startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config = _settings(memo)
    settings.peering.standalone = True
    settings.scanning.disabled = True
    settings.posting.level = logging.WARNING
    settings.persistence.finalizer = labels.PREFIX + "kopf-finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="a01gym.dev")
    settings.persistence.diffbase_storage = _NoDiffBase()
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    metrics = memo.get("metrics") or OperatorMetrics()
    kube = KubeClient(KubeCredentials.load(config.kubeconfig))
    reconciler = Reconciler(kube, config, metrics)
    await reconciler.start()
    memo["reconciler"] = reconciler
    logger.info("operator started in namespace %s", config.namespace)


@kopf.on.cleanup()
async def operator_cleanup(memo: kopf.Memo, **_: Any) -> None:
    reconciler: Reconciler | None = memo.get("reconciler")
    if reconciler is not None:
        await reconciler.stop()
        await reconciler.kube.aclose()


@kopf.on.probe(id="store")
def operator_probe(memo: kopf.Memo, **_: Any) -> dict[str, int]:
    reconciler: Reconciler = memo["reconciler"]
    store = reconciler.store
    return {"pods": len(store.pods), "episodes": len(store.episodes), "pools": len(store.pools)}


@kopf.on.event("v1", "pods", labels=_SANDBOX_PODS)
async def pod_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await memo["reconciler"].on_pod(type, dict(body))


@kopf.on.event(GROUP, VERSION, EPISODES)
async def episode_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await memo["reconciler"].on_episode(type, dict(body))


@kopf.on.event(GROUP, VERSION, SANDBOXPOOLS)
async def sandboxpool_event(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    await memo["reconciler"].on_pool(type, dict(body))
