"""Factory job specs: new scenarios ordered for the cells the policy cannot solve yet.

:func:`plan_job` turns an analysis into a :class:`FactoryJobSpec` (YAML or JSON) with one
:class:`ScenarioOrder` per weak train cell (success rate below the learnable band), so the
factory makes fresh variants of exactly the bug shapes that keep failing.
``a01gym factory build --from-feedback SPEC`` runs it through :func:`run_job`: the orders
become the pipeline's draft requests, gated in real sandboxes like any build and added to the
cache, whose index the runtime queries at every reset, so a running gateway samples them
without a restart.

The held-out eval split is never touched: an order for a held-out family is refused, and every
new scenario is drawn in a train domain, where "held out" is the spec's split config *and*
whatever the target cache already files under ``eval``. So :func:`~a01gym.factory.split.
assign_split` files every new scenario under ``train``; eval bundles and index rows are not
rewritten.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a01gym.errors import ConfigError
from a01gym.factory import domains, families, pipeline
from a01gym.factory.author import DraftRequest
from a01gym.factory.cache import ScenarioCache
from a01gym.factory.config import AuthorConfig, FactoryConfig, GateConfig, SplitConfig
from a01gym.feedback.analysis import Analysis
from a01gym.feedback.weights import CellStatus, Curriculum
from a01gym.sandbox.host.backend import SandboxBackend

__all__ = [
    "FactoryJobSpec",
    "ScenarioOrder",
    "draft_requests",
    "held_out",
    "load_job_spec",
    "plan_job",
    "run_job",
    "write_job_spec",
]

Band = Literal["easy", "medium", "hard"]
_SPEC_HINT = "write one with `a01gym analyze LOGS --job-out SPEC`"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScenarioOrder(_Model):
    """New scenarios for one family × difficulty cell."""

    family: str = Field(description="Bug family id, e.g. F04.")
    difficulty: Band
    count: int = Field(ge=1, le=1000, description="Candidates to author (gates may reject some).")
    reason: str = Field("", description="Why the cell was ordered, for people.")


class FactoryJobSpec(_Model):
    """What ``a01gym factory build --from-feedback`` builds."""

    version: Literal[1] = 1
    seed: int = Field(ge=0, lt=2**63, description="Draft seeds derive from it.")
    cache: str | None = Field(None, description="Cache to build into when --out is not given.")
    workers: int = Field(2, ge=1, le=256, description="Concurrent sandbox verifications.")
    author: AuthorConfig = Field(default_factory=AuthorConfig)
    split: SplitConfig = Field(
        default_factory=SplitConfig,
        description="The held-out domains and families (the cache's own eval rows add to it).",
    )
    orders: list[ScenarioOrder] = Field(default_factory=list)


def _seed(*parts: object) -> int:
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8]) >> 1


def plan_job(
    analysis: Analysis,
    plan: Curriculum,
    *,
    per_cell: int = 4,
    cache: str | None = None,
    split: SplitConfig | None = None,
) -> FactoryJobSpec:
    """Order ``per_cell`` new scenarios for every too-hard train cell of ``plan``.

    The seed is a digest of the analysed episode ids, so each new batch of logs orders
    different drafts and the same logs order the same ones.
    """
    by_key = {c.key: c for c in analysis.cells if c.split == "train"}
    orders = []
    for cell in plan.cells:
        family, _, difficulty = cell.key.partition("/")
        if cell.status is not CellStatus.TOO_HARD or family not in families.FAMILIES:
            continue
        if difficulty not in ("easy", "medium", "hard"):
            continue
        report = by_key[cell.key]
        top = max(report.failures.items(), key=lambda kv: kv[1], default=None)
        orders.append(
            ScenarioOrder(
                family=family,
                difficulty=difficulty,  # type: ignore[arg-type]
                count=per_cell,
                reason=f"{report.resolved}/{report.graded} resolved, below the band "
                f"{plan.band.low:.0%}-{plan.band.high:.0%}"
                + (f"; mostly {top[0].value}" if top else ""),
            )
        )
    episodes = sorted(v.episode_id for v in analysis.verdicts)
    return FactoryJobSpec(
        seed=_seed("feedback", *episodes),
        cache=cache,
        split=split or SplitConfig(),
        orders=orders,
    )


def held_out(spec: FactoryJobSpec, cache: ScenarioCache) -> tuple[set[str], set[str]]:
    """The held-out (domains, families): the spec's split config, plus any domain or family
    the cache files only under ``eval`` (the cache may have been built with another config;
    a split holds out whole domains and whole families, so one with a train row is not)."""
    domains_out = set(spec.split.eval_domains)
    families_out = set(spec.split.eval_families)
    if cache.index_path.exists():
        rows = cache.entries()
        train_domains = {e.domain for e in rows if e.split != "eval"}
        train_families = {e.family for e in rows if e.split != "eval"}
        for entry in rows:
            if entry.split == "eval":
                if entry.domain not in train_domains:
                    domains_out.add(entry.domain)
                if entry.family not in train_families:
                    families_out.add(entry.family)
    return domains_out, families_out


def draft_requests(
    spec: FactoryJobSpec, held_domains: set[str], held_families: set[str]
) -> list[DraftRequest]:
    """The drafts of every order, each in a train domain.

    Raises:
        ConfigError: when an order names an unknown or held-out family, or no domain is left.
    """
    train_domains = sorted(set(domains.DOMAINS) - held_domains)
    if not train_domains:
        raise ConfigError("split.eval_domains", "every domain is held out; none left to train on")
    requests: list[DraftRequest] = []
    for number, order in enumerate(spec.orders):
        if order.family not in families.FAMILIES:
            raise ConfigError(
                f"orders.{number}.family",
                f"unknown family {order.family!r}; known: {sorted(families.FAMILIES)}",
            )
        if order.family in held_families:
            raise ConfigError(
                f"orders.{number}.family",
                f"{order.family} is held out for eval, and feedback never builds eval scenarios",
                hint="remove the order; the eval split is only built by a full factory build",
            )
        offset = _seed(spec.seed, order.family, order.difficulty) % len(train_domains)
        for k in range(order.count):
            requests.append(
                DraftRequest(
                    index=len(requests),
                    seed=_seed(spec.seed, "order", order.family, order.difficulty, k),
                    family=order.family,
                    domain=train_domains[(offset + k) % len(train_domains)],
                    band=order.difficulty,
                )
            )
    return requests


async def run_job(
    spec: FactoryJobSpec,
    cache_path: Path,
    *,
    backend: SandboxBackend | None = None,
    progress: pipeline.ProgressFn | None = None,
) -> pipeline.BuildSummary:
    """Build the spec's orders into the cache at ``cache_path`` (gated like any build).

    Raises:
        ConfigError: for an order the eval split forbids (see :func:`draft_requests`).
    """
    cache = ScenarioCache(cache_path)
    held_domains, held_families = held_out(spec, cache)
    requests = draft_requests(spec, held_domains, held_families)
    if not requests:
        return pipeline.BuildSummary(
            candidates=0,
            admitted=0,
            rejected=0,
            duration_s=0.0,
            gate_duration_s=0.0,
            per_family={},
            domains=[],
            hashes=[],
        )
    config = FactoryConfig(
        seed=spec.seed,
        count=len(requests),
        families=sorted({r.family for r in requests}),
        domains=sorted({r.domain for r in requests}),
        author=spec.author,
        split=SplitConfig(eval_domains=sorted(held_domains), eval_families=sorted(held_families)),
        gates=GateConfig(workers=spec.workers),
    )
    return await pipeline.build(
        config, cache_path, backend=backend, progress=progress, requests=requests
    )


def write_job_spec(path: Path, spec: FactoryJobSpec) -> None:
    """Write ``spec`` as YAML (``.yaml``/``.yml``) or JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = spec.model_dump(mode="json")
    if path.suffix in (".yaml", ".yml"):
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    else:
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def load_job_spec(path: Path) -> FactoryJobSpec:
    """Read a spec written by :func:`write_job_spec` (or by hand).

    Raises:
        ConfigError: naming the file or the first invalid field.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror}", hint=_SPEC_HINT) from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(str(path), f"not valid JSON/YAML: {exc}", hint=_SPEC_HINT) from exc
    try:
        return FactoryJobSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ConfigError(where, f"{first['msg']} in {path}", hint=_SPEC_HINT) from exc
