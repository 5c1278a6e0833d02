"""Prometheus metrics of the gateway, its environments and the sandbox pool.

Every app gets its own :class:`~prometheus_client.CollectorRegistry`, so several apps in one
process (tests) never clash. Names follow ``a01gym_<area>_<thing>_<unit>``; label values come
from small fixed sets (transport, tool name, outcome), never ids. Pool gauges are read from
the backend's ``stats()`` at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from a01gym.env import models
from a01gym.env.sampler import CurriculumStats
from a01gym.sandbox.host.backend import PoolStats

__all__ = ["CONTENT_TYPE", "GatewayMetrics", "tool_label"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_TOOL_LABELS = frozenset(models.TOOL_NAMES) | {"invalid", "list_tools"}
_EXPERT_OUTCOMES = frozenset(
    {"ok", "timeout", "unreachable", "http_error", "bad_response", "off", "budget"}
)


def tool_label(name: object) -> str:
    """A bounded label value for a tool name (unknown names collapse to ``invalid``)."""
    return name if isinstance(name, str) and name in _TOOL_LABELS else "invalid"


class _PoolCollector(Collector):
    def __init__(
        self, stats: Callable[[], PoolStats | None], spares: Callable[[], int] | None
    ) -> None:
        self._stats = stats
        self._spares = spares

    def collect(self) -> Iterator[Metric]:
        if self._spares is not None:
            yield GaugeMetricFamily(
                "a01gym_env_warm_spares_sandboxes",
                "Sandboxes prepared for recent scenarios (counted as in_use by the pool).",
                value=self._spares(),
            )
        stats = self._stats()
        if stats is None:
            return
        gauge = GaugeMetricFamily(
            "a01gym_sandbox_pool_sandboxes", "Sandboxes by state.", labels=["state"]
        )
        gauge.add_metric(["idle"], stats.idle)
        gauge.add_metric(["in_use"], stats.in_use)
        gauge.add_metric(["starting"], stats.starting)
        yield gauge
        if stats.pool_target is not None:
            pool = GaugeMetricFamily(
                "a01gym_sandbox_warm_pool_sandboxes",
                "Empty sandboxes of the warm pool: the size it refills to (pool_size, or the "
                "recent peak of a burst), and what it holds (idle).",
                labels=["size"],
            )
            pool.add_metric(["target"], stats.pool_target)
            pool.add_metric(["actual"], stats.idle)
            yield pool
        yield GaugeMetricFamily(
            "a01gym_sandbox_waiting",
            "acquire() calls and app starts queued for a free sandbox or a start turn.",
            value=stats.waiting,
        )
        yield CounterMetricFamily(
            "a01gym_sandbox_crashed", "Sandboxes that died on their own.", value=stats.crashed_total
        )
        yield CounterMetricFamily(
            "a01gym_sandbox_spawned", "Sandboxes started.", value=stats.spawned_total
        )


class _CurriculumCollector(Collector):
    def __init__(self, stats: Callable[[], CurriculumStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self._stats()
        loads = CounterMetricFamily(
            "a01gym_env_curriculum_reloads",
            "Curriculum weights files read at a reset, by result (rejected: the last good "
            "weights stayed).",
            labels=["result"],
        )
        loads.add_metric(["loaded"], stats.loaded)
        loads.add_metric(["rejected"], stats.rejected)
        yield loads
        if stats.loaded_at is not None:
            yield GaugeMetricFamily(
                "a01gym_env_curriculum_loaded_timestamp_seconds",
                "When the weights in force were loaded (Unix time).",
                value=stats.loaded_at,
            )


class GatewayMetrics:
    """The metric objects of one app, plus the registry they live in."""

    def __init__(
        self,
        pool_stats: Callable[[], PoolStats | None] | None = None,
        spares: Callable[[], int] | None = None,
        curriculum: Callable[[], CurriculumStats] | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.sessions_active = Gauge(
            "a01gym_gateway_sessions_active", "Open sessions.", ["transport"], registry=r
        )
        self.sessions_opened = Counter(
            "a01gym_gateway_sessions_opened_total", "Sessions opened.", ["transport"], registry=r
        )
        self.sessions_rejected = Counter(
            "a01gym_gateway_sessions_rejected_total",
            "Connections refused.",
            ["reason"],
            registry=r,
        )
        self.sessions_reaped = Counter(
            "a01gym_gateway_sessions_reaped_total", "Idle sessions closed.", registry=r
        )
        self.protocol_errors = Counter(
            "a01gym_gateway_protocol_errors_total",
            "Error replies by protocol code.",
            ["code"],
            registry=r,
        )
        self.resets = Counter(
            "a01gym_env_resets_total", "Resets by outcome.", ["outcome"], registry=r
        )
        self.reset_seconds = Histogram(
            "a01gym_env_reset_duration_seconds",
            "Reset latency.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.steps = Counter(
            "a01gym_env_steps_total", "Steps by tool and outcome.", ["tool", "outcome"], registry=r
        )
        self.step_seconds = Histogram(
            "a01gym_env_step_duration_seconds",
            "Step latency by tool.",
            ["tool"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.verify_seconds = Histogram(
            "a01gym_env_verify_duration_seconds",
            "Hidden grading latency.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.episodes = Counter(
            "a01gym_env_episodes_total", "Graded episodes by result.", ["result"], registry=r
        )
        self.reward = Histogram(
            "a01gym_env_episode_reward_value",
            "Terminal rewards.",
            buckets=(-1, -0.5, -0.2, -0.1, 0, 0.05, 0.1, 0.2, 0.5, 0.8, 0.99, 1),
            registry=r,
        )
        self.security = Histogram(
            "a01gym_env_episode_security_ratio",
            "Fraction of hidden exploits blocked.",
            buckets=(0, 0.25, 0.5, 0.75, 0.99, 1),
            registry=r,
        )
        self.regression = Histogram(
            "a01gym_env_episode_regression_ratio",
            "Fraction of hidden regression tests passed.",
            buckets=(0, 0.25, 0.5, 0.75, 0.99, 1),
            registry=r,
        )
        self.expert_calls = Counter(
            "a01gym_expert_calls_total",
            "ask_expert calls by outcome (off: not offered; budget: no questions left).",
            ["outcome"],
            registry=r,
        )
        self.expert_seconds = Histogram(
            "a01gym_expert_call_duration_seconds",
            "Expert endpoint latency per question (failed ones included).",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.expert_tokens = Counter(
            "a01gym_expert_tokens_total",
            "Tokens the expert endpoint reported, by kind.",
            ["kind"],
            registry=r,
        )
        self.expert_shaping = Counter(
            "a01gym_expert_shaping_episodes_total",
            "Graded episodes that offered the expert, by shaping component paid.",
            ["component"],
            registry=r,
        )
        if pool_stats is not None:
            r.register(_PoolCollector(pool_stats, spares))
        if curriculum is not None:
            r.register(_CurriculumCollector(curriculum))

    def _observe_expert(self, result: object) -> None:
        if not isinstance(result, dict):
            return
        outcome = result.get("outcome")
        if outcome not in _EXPERT_OUTCOMES:
            return
        self.expert_calls.labels(outcome).inc()
        if outcome in ("off", "budget"):
            return
        self.expert_seconds.observe(float(result.get("seconds") or 0.0))
        self.expert_tokens.labels("prompt").inc(int(result.get("prompt_tokens") or 0))
        self.expert_tokens.labels("completion").inc(int(result.get("completion_tokens") or 0))

    def _observe_shaping(self, shaping: object) -> None:
        if not isinstance(shaping, dict) or not shaping.get("expert_offered"):
            return
        self.expert_shaping.labels("offered").inc()
        for component in ("solo_bonus", "recovery_bonus", "blind_call_penalty"):
            if shaping.get(component):
                self.expert_shaping.labels(component).inc()

    def observe_step(self, tool: str, observation: dict[str, object], seconds: float) -> None:
        label = tool_label(tool)
        outcome = "error" if observation.get("error") else "ok"
        self.steps.labels(label, outcome).inc()
        self.step_seconds.labels(label).observe(seconds)
        if label == "ask_expert":
            self._observe_expert(observation.get("result"))
        breakdown = observation.get("reward_breakdown")
        if isinstance(breakdown, dict):
            self.episodes.labels("resolved" if breakdown.get("resolved") else "unresolved").inc()
            self.reward.observe(float(breakdown.get("reward", 0.0)))  # type: ignore[arg-type]
            self.security.observe(float(breakdown.get("security", 0.0)))  # type: ignore[arg-type]
            self.regression.observe(float(breakdown.get("regression", 0.0)))  # type: ignore[arg-type]
            self.verify_seconds.observe(float(breakdown.get("verify_ms", 0.0)) / 1000)  # type: ignore[arg-type]
            self._observe_shaping(breakdown.get("shaping"))

    def render(self) -> bytes:
        return generate_latest(self.registry)
