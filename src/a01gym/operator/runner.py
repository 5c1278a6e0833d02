"""Run the operator: Prometheus endpoint, then kopf in this thread's own event loop.

kopf is started with :func:`kopf.operator` rather than its CLI so the process settings,
the namespace (a namespaced operator needs only a Role) and the stop/ready flags come from
us; tests and ``a01gym operator`` share this one entry point.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

import kopf
from prometheus_client import start_http_server

from a01gym.config import get_settings
from a01gym.operator import handlers, netguard
from a01gym.operator.metrics import OperatorMetrics
from a01gym.operator_settings import OperatorSettings
from a01gym.sandbox.host.kubernetes import KubeClient, KubeCredentials

__all__ = ["run"]

logger = logging.getLogger(__name__)


def run(
    settings: OperatorSettings | None = None,
    *,
    stop_flag: threading.Event | None = None,
    ready_flag: threading.Event | None = None,
) -> None:
    """Run until stopped (SIGINT/SIGTERM, or ``stop_flag``).

    Raises:
        ConfigError: no NetworkPolicy isolates sandbox pods and no explicit opt-out was given.
    """
    settings = settings or get_settings().operator
    assert handlers.__all__  # importing the module registers the handlers
    asyncio.run(_check_isolation(settings))
    metrics = OperatorMetrics()
    if settings.metrics_port:
        start_http_server(settings.metrics_port, settings.metrics_host)
    memo = kopf.Memo(operator_settings=settings, metrics=metrics)
    _tune_gc()
    asyncio.run(
        kopf.operator(
            standalone=True,
            clusterwide=False,
            namespaces=[settings.namespace],
            liveness_endpoint=settings.liveness_endpoint,
            memo=memo,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    )


def _tune_gc() -> None:
    """Collect garbage less often than CPython's default (every 700 allocations).

    The operator holds every Episode and pod of its namespace as dicts, hundreds of thousands
    of objects at 10,000 Episodes, and each watch event allocates thousands more: with the
    default thresholds the cyclic collector took more of the operator's CPU in a burst than
    any handler. What was imported before the first event is frozen out of its scans."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


async def _check_isolation(settings: OperatorSettings) -> None:
    kube = KubeClient(KubeCredentials.load(settings.kubeconfig))
    try:
        await netguard.check_sandbox_isolation(kube, settings)
    finally:
        await kube.aclose()
