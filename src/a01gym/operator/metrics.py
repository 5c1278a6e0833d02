"""Prometheus metrics of the operator, named ``a01gym_operator_<thing>_<unit>``.

Label values come from small fixed sets (``source``: warm/cold; ``state``: idle/ready/
claimed; ``kind``: episode/pool/sweep); never an Episode or pod name.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["OperatorMetrics"]

_CLAIM_BUCKETS = (0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class OperatorMetrics:
    """One set of collectors, registered once per process (or per test registry)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry or REGISTRY
        self.claim_latency = Histogram(
            "a01gym_operator_claim_latency_seconds",
            "Episode creation to Ready, by where the sandbox came from.",
            ["source"],
            buckets=_CLAIM_BUCKETS,
            registry=registry,
        )
        self.pool_pods = Gauge(
            "a01gym_operator_pool_pods",
            "Sandbox pods of all pools, by state.",
            ["state"],
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "a01gym_operator_reconcile_errors_total",
            "Reconcile attempts that raised, by object kind.",
            ["kind"],
            registry=registry,
        )
        self.episode_transitions = Counter(
            "a01gym_operator_episode_transitions_total",
            "Episode phase transitions, by the phase entered.",
            ["phase"],
            registry=registry,
        )
        self.claim_conflicts = Counter(
            "a01gym_operator_claim_conflicts_total",
            "Warm claims lost to a concurrent writer (HTTP 409).",
            registry=registry,
        )
