"""The factory line: plan → author → compile → gold gates → cache.

:func:`build` is what ``a01gym factory build`` runs and :func:`build_demo` what ``make demo``
runs. Each admitted scenario is written to the cache as soon as its gates finish, so an
interrupted build keeps everything it finished and nothing half-written.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from a01gym.errors import ScenarioError
from a01gym.factory import compiler, gates, split
from a01gym.factory.author import Author, AuthorError, DraftRequest, TemplateAuthor, plan
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.factory.config import FactoryConfig
from a01gym.sandbox.backend import SandboxBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.cache import Rejection

__all__ = ["BuildSummary", "FamilyStats", "ProgressFn", "build", "build_demo", "make_author"]

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


async def _draft_all(
    author: Author, requests: list[DraftRequest], workers: int, progress: ProgressFn | None
) -> tuple[list[_Candidate], list[tuple[DraftRequest, str, str, str | None]]]:
    """Author and compile every request; returns candidates and (request, stage, reason)."""
    candidates: list[_Candidate] = []
    failures: list[tuple[DraftRequest, str, str, str | None]] = []
    threaded = not isinstance(author, TemplateAuthor)
    semaphore = asyncio.Semaphore(max(1, workers))
    done = 0

    async def one(request: DraftRequest) -> None:
        nonlocal done
        try:
            if threaded:
                async with semaphore:
                    spec = await asyncio.to_thread(author.draft, request)
            else:
                spec = author.draft(request)
        except AuthorError as exc:
            failures.append((request, "author", exc.reason, None))
        else:
            digest = compiler.spec_digest(spec)
            try:
                bundle = compiler.compile_bundle(spec)
            except (ScenarioError, ValueError) as exc:
                failures.append((request, "compile", str(exc), digest))
            else:
                candidates.append(_Candidate(request, bundle, digest))
        done += 1
        if progress is not None:
            progress("author", done, len(requests))

    await asyncio.gather(*(one(r) for r in requests))
    candidates.sort(key=lambda c: c.request.index)
    return candidates, failures


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
    gate_seconds = 0.0
    with cache.writer():
        candidates, failures = await _draft_all(author, requests, config.gates.workers, progress)

        def record_rejection(
            request: DraftRequest, stage: str, reason: str, sha: str | None
        ) -> None:
            family = stats[request.family]
            family.rejected += 1
            key = f"{stage}: {short_reason(reason)}"
            family.reasons[key] = family.reasons.get(key, 0) + 1
            cache.reject(
                Rejection(
                    spec_sha256=sha,
                    family=request.family,
                    domain=request.domain,
                    stage=stage,
                    reason=reason,
                    author=provenance.author,
                    model=provenance.model,
                    config_hash=provenance.config_hash,
                    created_at=time.time(),
                )
            )

        for request, stage, reason, sha in failures:
            logger.info("candidate %d rejected at %s: %s", request.index, stage, reason)
            record_rejection(request, stage, reason, sha)
        if candidates and config.gates.enabled:
            bundles = [c.bundle for c in candidates if c.bundle is not None]
            gated = [0]

            def on_done(index: int, report: gates.GateReport) -> None:
                candidate = candidates[index]
                bundle = bundles[index]
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
                    record_rejection(
                        candidate.request, "gates", report.reason, candidate.spec_sha256
                    )
                gated[0] += 1
                if progress is not None:
                    progress("gates", gated[0], len(bundles))

            gate_started = time.perf_counter()
            if backend is None:
                from a01gym.sandbox.local import LocalBackend

                # No standby warm-ups: they trade CPU for acquire latency, and a build is
                # bound by CPU, not by how fast one sandbox is acquired.
                async with LocalBackend(
                    pool_size=config.gates.workers + 2, warm_standby=False
                ) as local:
                    await gates.gate_many(
                        local,
                        bundles,
                        workers=config.gates.workers,
                        seed=config.seed,
                        on_done=on_done,
                    )
            else:
                await gates.gate_many(
                    backend,
                    bundles,
                    workers=config.gates.workers,
                    seed=config.seed,
                    on_done=on_done,
                )
            gate_seconds = time.perf_counter() - gate_started
    admitted = sum(s.admitted for s in stats.values())
    return BuildSummary(
        candidates=len(requests),
        admitted=admitted,
        rejected=len(requests) - admitted,
        duration_s=time.perf_counter() - started,
        gate_duration_s=gate_seconds,
        per_family=dict(sorted(stats.items())),
        domains=sorted(domains),
        hashes=sorted(hashes),
    )


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
