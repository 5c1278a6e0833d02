"""The factory line: plan → author → compile → gold gates → cache.

:func:`build` is what ``a01gym factory build`` runs and :func:`build_demo` what ``make demo``
runs. Each admitted scenario is written to the cache as soon as its gates finish, so an
interrupted build keeps everything it finished and nothing half-written. The giveaway gate
judges families, not candidates, so it runs once the candidates' own gates have finished.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from a01gym.errors import ScenarioError
from a01gym.factory import compiler, gates, giveaway_gate, split
from a01gym.factory.author import Author, AuthorError, DraftRequest, TemplateAuthor, plan
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.factory.config import FactoryConfig, SplitConfig
from a01gym.sandbox.host.backend import SandboxBackend
from a01gym.scenario.bundle import Bundle

__all__ = [
    "BuildSummary",
    "FamilyStats",
    "ProgressFn",
    "build",
    "build_demo",
    "make_author",
]

logger = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` with stage ``author`` or ``gates``."""


class FamilyStats(BaseModel):
    """Admissions and rejections of one family."""

    admitted: int = 0
    rejected: int = 0
    reasons: dict[str, int] = Field(default_factory=dict)


class BuildSummary(BaseModel):
    """What a build did."""

    candidates: int
    admitted: int
    rejected: int
    duration_s: float
    gate_duration_s: float
    per_family: dict[str, FamilyStats]
    domains: list[str]
    hashes: list[str]
    giveaways: giveaway_gate.GiveawayVerdict | None = None

    @property
    def yield_(self) -> float:
        """Admitted / candidates."""
        return self.admitted / self.candidates if self.candidates else 0.0


def short_reason(reason: str) -> str:
    """A rejection reason without its details, for tables (``trap:x resolves the scenario``)."""
    head = re.split(r"[:(]\s", reason.split(";")[0], maxsplit=1)[0]
    return head.strip()[:80]


def make_author(config: FactoryConfig) -> Author:
    """The author the config asks for."""
    if config.author.kind == "llm":
        from a01gym.factory.llm_author import LLMAuthor

        return LLMAuthor(config.author.llm)
    return TemplateAuthor()


@dataclasses.dataclass
class _Candidate:
    request: DraftRequest
    bundle: Bundle | None = None
    spec_sha256: str | None = None
    stage: str = ""
    reason: str = ""


class _Drafter:
    """Authors and compiles candidates off the event loop, so the gates of earlier candidates
    run while later ones are written: a template draft and compile take ~50 ms of CPU that
    would otherwise stall every sandbox run the loop drives. Template drafts go one at a
    time, in request order; an LLM author's (network-bound) up to ``workers`` at once."""

    def __init__(
        self,
        author: Author,
        workers: int,
        total: int,
        progress: ProgressFn | None,
        held_out: SplitConfig,
    ):
        self.author, self.total, self.progress = author, total, progress
        self.held_out = held_out
        threads = 1 if isinstance(author, TemplateAuthor) else max(1, workers)
        self._threads = asyncio.Semaphore(threads)
        self.done = 0
        self.failed = 0

    async def draft(self, request: DraftRequest) -> _Candidate:
        async with self._threads:
            candidate = await asyncio.to_thread(self._draft, request)
        self.done += 1
        self.failed += candidate.bundle is None
        if self.progress is not None:
            self.progress("author", self.done, self.total)
        return candidate

    def _draft(self, request: DraftRequest) -> _Candidate:
        try:
            spec = self.author.draft(request)
        except AuthorError as exc:
            return _Candidate(request, stage="author", reason=exc.reason)
        spec = split.as_built(spec, self.held_out)  # eval: the lowest hint level
        digest = compiler.spec_digest(spec)
        try:
            return _Candidate(request, compiler.compile_bundle(spec), digest)
        except (ScenarioError, ValueError) as exc:
            return _Candidate(request, spec_sha256=digest, stage="compile", reason=str(exc))


@contextlib.asynccontextmanager
async def _sandboxes(
    config: FactoryConfig, backend: SandboxBackend | None
) -> AsyncIterator[SandboxBackend | None]:
    """The gates' backend: ``backend``, else a local one sized to the workers (none when the
    gates are off)."""
    if backend is not None or not config.gates.enabled:
        yield backend
        return
    from a01gym.pool_settings import PoolGrowthSettings
    from a01gym.sandbox.host.local import LocalBackend

    # No standby warm-ups and no pool growth: they trade CPU for acquire latency, and a build
    # is bound by CPU, not by how fast a candidate gets its one sandbox (a grown pool would
    # mostly hold sandboxes forked for nothing). SQLAlchemy from the start: a build draws ORM
    # apps (styles.ORM_SHARE), and the first would otherwise stall while the zygote imports it.
    async with LocalBackend(
        pool_size=config.gates.workers + 2,
        warm_standby=False,
        pool_growth=PoolGrowthSettings(enabled=False),
        preload=["sqlalchemy"],
    ) as local:
        yield local


async def build(
    config: FactoryConfig,
    cache_path: Path | str,
    *,
    author: Author | None = None,
    backend: SandboxBackend | None = None,
    progress: ProgressFn | None = None,
    requests: list[DraftRequest] | None = None,
) -> BuildSummary:
    """Build ``config.count`` candidates into the cache at ``cache_path``.

    Each candidate goes through the gates as soon as it is compiled, while later ones are
    still being authored.

    Args:
        config: what to build.
        cache_path: the cache directory (created if missing).
        author: overrides the config's author (tests pass fakes here).
        backend: sandboxes for the gates; default a :class:`LocalBackend` sized to the workers.
        progress: optional progress callback.
        requests: the drafts to make instead of ``plan(config)``'s, e.g. the feedback loop's
            orders for weak family × difficulty cells (indexes 0..n-1).

    Raises:
        CacheLockedError: never; a second concurrent build waits for the lock.
    """
    started = time.perf_counter()
    author = author or make_author(config)
    provenance = Provenance(author=author.name, model=author.model, config_hash=config.digest())
    cache = ScenarioCache(cache_path)
    requests = plan(config) if requests is None else requests
    stats: dict[str, FamilyStats] = collections.defaultdict(FamilyStats)
    hashes: list[str] = []
    domains: set[str] = set()
    gate_started: float | None = None
    gated = 0

    def record_rejection(request: DraftRequest, stage: str, reason: str, sha: str | None) -> None:
        family = stats[request.family]
        family.rejected += 1
        key = f"{stage}: {short_reason(reason)}"
        family.reasons[key] = family.reasons.get(key, 0) + 1
        cache.reject(
            provenance.rejection(
                spec_sha256=sha,
                family=request.family,
                domain=request.domain,
                stage=stage,
                reason=reason,
            )
        )

    def record_gates(candidate: _Candidate, bundle: Bundle, report: gates.GateReport) -> None:
        nonlocal gated
        labels = bundle.hidden.labels
        if report.admitted:
            cache.add(
                bundle,
                split=split.assign_split(labels["domain"], labels["family"], config.split),
                validation=report.model_dump(mode="json"),
                provenance=provenance,
            )
            stats[labels["family"]].admitted += 1
            hashes.append(bundle.manifest.content_hash)
            domains.add(labels["domain"])
        else:
            logger.info("candidate %d rejected: %s", candidate.request.index, report.reason)
            record_rejection(candidate.request, "gates", report.reason, candidate.spec_sha256)
        gated += 1
        if progress is not None:
            progress("gates", gated, len(requests) - drafter.failed)

    with cache.writer():
        drafter = _Drafter(author, config.gates.workers, len(requests), progress, config.split)
        keeper = gates.Gatekeeper(workers=config.gates.workers, seed=config.seed)
        # Set once the backend is up (None: the gates are off); the first candidates are
        # authored while its zygote starts.
        ready: asyncio.Future[SandboxBackend | None] = asyncio.get_running_loop().create_future()

        async def one(request: DraftRequest) -> None:
            async with keeper.place():
                candidate = await drafter.draft(request)
                if candidate.bundle is None:
                    logger.info(
                        "candidate %d rejected at %s: %s",
                        request.index,
                        candidate.stage,
                        candidate.reason,
                    )
                    record_rejection(
                        request, candidate.stage, candidate.reason, candidate.spec_sha256
                    )
                elif (sandboxes := await asyncio.shield(ready)) is not None:
                    report = await keeper.gate(sandboxes, candidate.bundle)
                    record_gates(candidate, candidate.bundle, report)

        work = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            async with _sandboxes(config, backend) as sandboxes:
                gate_started = time.perf_counter()
                ready.set_result(sandboxes)
                await _all_or_none(work)
        finally:  # e.g. the backend did not start: no candidate waits for it
            for task in work:
                task.cancel()
            await asyncio.gather(*work, return_exceptions=True)
        verdict = None
        if hashes and config.gates.giveaways != "off":
            verdict = giveaway_gate.judge(cache, config.gates, hashes, provenance)
            for digest, removed in verdict.removed.items():
                hashes.remove(digest)
                family = stats[removed]
                family.admitted -= 1
                family.rejected += 1
                family.reasons["giveaways"] = family.reasons.get("giveaways", 0) + 1
    admitted = sum(s.admitted for s in stats.values())
    finished = time.perf_counter()
    return BuildSummary(
        candidates=len(requests),
        admitted=admitted,
        rejected=len(requests) - admitted,
        duration_s=finished - started,
        gate_duration_s=finished - gate_started if gate_started and gated else 0.0,
        per_family=dict(sorted(stats.items())),
        domains=sorted(domains),
        hashes=sorted(hashes),
        giveaways=verdict,
    )


async def _all_or_none(work: list[Any]) -> None:
    """Await every coroutine or future; if one fails, cancel the rest (so none outlives the
    backend the caller is about to close) and re-raise its exception."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def build_demo(
    cache_path: Path | str,
    *,
    count: int = 50,
    seed: int = 0,
    workers: int = 2,
    progress: ProgressFn | None = None,
    **overrides: Any,
) -> BuildSummary:
    """Build ~``count`` scenarios with the default config into ``cache_path`` (first runs).

    Uses the offline template author and local sandboxes, so it needs no network.
    """
    config = FactoryConfig.model_validate(
        {"count": count, "seed": seed, "gates": {"workers": workers}, **overrides}
    )
    return asyncio.run(build(config, cache_path, progress=progress))
