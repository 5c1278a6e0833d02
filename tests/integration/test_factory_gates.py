"""Gold gates and builds in real local sandboxes (no mocks).

Every family's scenarios, single- and multi-site, in both data-access styles, are gated by
test_factory_fix_shapes (one per fix shape and style, :mod:`.gating`). Here: the ORM
relationship shapes, visible reproductions, rejections (a trap equal to the fix, a denial trap
that passes every regression, an app that does not start), and whole builds
(reproducibility with one candidate per family, interrupted builds).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from a01gym.factory import (
    author,
    compiler,
    config,
    families,
    gates,
    pipeline,
)
from a01gym.factory.cache import ScenarioCache
from a01gym.factory.styles import orm_relationship
from a01gym.grading.scoring import PARTIAL_CREDIT
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import TestKind

from . import gating
from .orm_shapes import RELATIONSHIP_SITES, relationship_bundle


def _bundle(family: str, index: int = 0) -> Bundle:
    cfg = config.FactoryConfig(count=index + 1, families=[family])
    return compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[index]))


def test_the_catalog_numbers_its_families_without_gaps() -> None:
    assert sorted(families.FAMILIES) == [f"F{n:02d}" for n in range(1, len(families.FAMILIES) + 1)]


@pytest.fixture(scope="module")
def gated() -> dict[str, gating.Gated | Exception]:
    """The candidates this module's tests expect through the gates, gated at once
    (:func:`.gating.gate_together`): each relationship shape (gate seed 3), the secure export
    (seed 3) and each family's visible reproduction (seed 1)."""
    wanted: dict[str, tuple[Callable[[], Bundle], int]] = {
        f"relationship-{family}-{site}-{fix}": (
            functools.partial(relationship_bundle, family, site, fix),
            3,
        )
        for family, site in RELATIONSHIP_SITES
        for fix in orm_relationship.FIXES
    }
    wanted["secure-export"] = (_secure_export_bundle, 3)
    for family in _REPRODUCED:
        wanted[f"visible-{family}"] = (functools.partial(_visible_reproduction_bundle, family), 1)
    return gating.gate_together(wanted)


@pytest.mark.parametrize("fix", orm_relationship.FIXES)
@pytest.mark.parametrize(("family", "site"), RELATIONSHIP_SITES)
def test_relationship_shape_passes_every_gate(
    family: str, site: str, fix: str, gated: dict[str, gating.Gated | Exception]
) -> None:
    # The ORM relationship that loads too much (owner.<records> serialised whole): exploitable
    # as the family's catalogue entry says, fixed by the drawn condition, and its over-fix
    # (only the caller's own children) breaks a legitimate read and scores 0.
    bundle, report = gating.outcome(gated, f"relationship-{family}-{site}-{fix}")
    repository = bundle.workspace["app/repository.py"].decode()
    assert "options(selectinload(User." in repository or "for row in owner." in repository
    gating.assert_passes_every_gate(bundle, report, probed=True)
    over_fix = next(run for run in report.runs if run.name == "trap:over_filter")
    assert over_fix.score == 0.0 and over_fix.regression < 1.0


def _secure_export_bundle() -> Bundle:
    return relationship_bundle("F03", "record.export", "scoped", trap=None)


def test_secure_export_read_through_the_relationship_passes_every_gate(
    gated: dict[str, gating.Gated | Exception],
) -> None:
    # F03 scenarios draw the shape too: their reference fix routes the export through the
    # repository, whose secure relationship read must keep every legitimate row.
    bundle, report = gating.outcome(gated, "secure-export")
    assert "selectinload(User." in bundle.workspace["app/repository.py"].decode()
    gating.assert_passes_every_gate(bundle, report, probed=True)


def _visible_reproduction_bundle(family: str) -> Bundle:
    """A hint-level-4 scenario whose hidden suite is its visible exploit plus its regressions."""
    cfg = config.FactoryConfig(count=30, families=[family], seed=3)
    spec = next(
        s
        for s in (author.TemplateAuthor().draft(r) for r in author.plan(cfg))
        if s.knobs.hint_level == 4
    )
    bundle = compiler.compile_bundle(spec)
    visible = [t for t in bundle.manifest.visible_tests if t.kind is TestKind.EXPLOIT]
    assert len(visible) == 1
    regressions = [t for t in bundle.hidden.tests if t.kind is TestKind.REGRESSION]
    hidden = bundle.hidden.model_copy(update={"tests": visible + regressions, "traps": {}})
    return dataclasses.replace(bundle, hidden=hidden).with_hash()


_REPRODUCED = [f.id for f in families.FAMILIES.values() if f.exploits is not None]
"""The families whose hint level 4 shows a visible reproduction."""


@pytest.mark.parametrize("family", _REPRODUCED)
def test_visible_reproduction_fails_on_the_app_and_passes_after_the_fix(
    family: str, gated: dict[str, gating.Gated | Exception]
) -> None:
    # The agent's reproduction (hint level 4) must show the bug in its own world, and the
    # reference fix must block it, or the hint misleads.
    _, report = gating.outcome(gated, f"visible-{family}")
    assert report.admitted, report.reason


async def test_trap_that_fixes_the_bug_is_rejected_with_its_reason() -> None:
    bundle = _bundle("F01")
    hidden = bundle.hidden.model_copy(update={"traps": {"fake": bundle.hidden.reference_fix}})
    broken = dataclasses.replace(bundle, hidden=hidden).with_hash()
    async with LocalBackend(pool_size=2) as backend:
        report = await gates.gate_bundle(backend, broken, semaphore=asyncio.Semaphore(2))
    assert not report.admitted
    assert "trap:fake resolves the scenario" in report.reason


async def test_denial_trap_that_passes_every_regression_is_rejected() -> None:
    # F03's auth-only trap blocks half the exploits and breaks nothing (score 0.1): fine as a
    # partial fix, but a deny-all that scored so would mean the regressions miss a denial.
    bundle = _bundle("F03")
    partial = bundle.hidden.traps["auth_only"]
    hidden = bundle.hidden.model_copy(update={"traps": {"deny_all": partial, "auth_only": partial}})
    mislabelled = dataclasses.replace(bundle, hidden=hidden).with_hash()
    async with LocalBackend(pool_size=2) as backend:
        report = await gates.gate_bundle(backend, mislabelled, semaphore=asyncio.Semaphore(2))
    runs = {run.name: run for run in report.runs}
    assert 0.0 < runs["trap:auth_only"].score <= PARTIAL_CREDIT
    assert report.reasons == [
        f"trap:deny_all passes every regression test (score {runs['trap:deny_all'].score:.3f}, "
        "not 0): add a regression test for the legitimate use it breaks"
    ]


async def test_app_that_does_not_start_is_rejected() -> None:
    bundle = _bundle("F02")
    workspace = dict(bundle.workspace)
    workspace["app/main.py"] = b"raise RuntimeError('boom')\n"
    broken = dataclasses.replace(bundle, workspace=workspace).with_hash()
    async with LocalBackend(pool_size=2) as backend:
        report = await gates.gate_bundle(backend, broken, semaphore=asyncio.Semaphore(2))
    assert not report.admitted
    assert "vulnerable app did not start" in report.reason
    assert "reference fix scores" in report.reason


@pytest.mark.slow
@pytest.mark.timeout(900)  # two builds: 250-300 s under a CI run's load (2026-12-07)
async def test_build_is_reproducible_and_split_holds_out(tmp_path: Path) -> None:
    count = len(families.FAMILIES)  # one candidate of each family
    # as many runs at a time as the other gate tests (the verdicts do not depend on it)
    cfg = config.FactoryConfig(count=count, seed=4, gates=config.GateConfig(workers=gating.WORKERS))
    first = await pipeline.build(cfg, tmp_path / "a")
    second = await pipeline.build(cfg, tmp_path / "b")
    assert set(first.per_family) == set(families.FAMILIES)
    assert first.admitted >= count - 1, first.per_family
    assert first.hashes == second.hashes
    cache = ScenarioCache(tmp_path / "a")
    entries = cache.entries()
    assert sorted(e.hash for e in entries) == first.hashes
    for entry in entries:
        held_out = entry.domain in cfg.split.eval_domains or entry.family in cfg.split.eval_families
        assert entry.split == ("eval" if held_out else "train")
        assert entry.validation["admitted"] is True
        assert cache.load(entry.hash, verify=True).hidden.labels["family"] == entry.family
    train = cache.entries(split="train")
    assert not {e.domain for e in train} & set(cfg.split.eval_domains)
    assert not {e.family for e in train} & set(cfg.split.eval_families)


_BUILD = textwrap.dedent(
    """
    import asyncio, signal, sys
    # Ctrl-C as in a terminal, even when this test runs under a job started with `&`, which
    # inherits SIGINT as ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from a01gym.factory import config, pipeline
    cfg = config.FactoryConfig(count=60, seed=9, gates=config.GateConfig(workers=2))
    asyncio.run(pipeline.build(cfg, sys.argv[1]))
    """
)


def _admitted(root: Path) -> int:
    try:
        with sqlite3.connect(root / "index.sqlite", timeout=5) as connection:
            return connection.execute("SELECT COUNT(*) FROM scenarios").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_build_leaves_a_consistent_cache(tmp_path: Path, signum: int) -> None:
    root = tmp_path / "cache"
    process = subprocess.Popen(
        [sys.executable, "-c", _BUILD, str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while _admitted(root) < 2 and time.monotonic() < deadline:
            assert process.poll() is None, "the build ended before it could be interrupted"
            time.sleep(0.2)
        assert _admitted(root) >= 2
        os.kill(process.pid, signum)
        # One Ctrl-C must be enough. (It once was not: Python 3.11's asyncio.wait_for could
        # swallow the cancellation; src/ uses asyncio.timeout instead since.) The build stops
        # in well under a second here; the bound is for a machine loaded by a parallel suite.
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != 0
    cache = ScenarioCache(root)
    with cache.writer(wait=False):  # the lock was released by the dead build; repair runs
        pass
    entries = cache.entries()
    assert len(entries) >= 2
    for entry in entries:
        cache.load(entry.hash, verify=True)
    assert {p.name for p in (root / "v1").iterdir()} == {e.hash for e in entries}
    assert not (root / "tmp").exists() or not list((root / "tmp").iterdir())


@pytest.mark.slow
def test_cli_build_then_validate_with_gates(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from a01gym.cli.factory import app

    runner = CliRunner()
    cfg = tmp_path / "factory.yaml"
    cfg.write_text("seed: 3\nfamilies: [F01, F06, F10, F14]\n")
    out = tmp_path / "cache"
    built = runner.invoke(
        app, ["build", "-c", str(cfg), "-o", str(out), "--count", "4", "--workers", "2", "--json"]
    )
    assert built.exit_code == 0, built.output
    assert "factory build: 4/4 admitted" in built.output
    summary = json.loads(built.stdout[built.stdout.index("{") :])
    assert summary["admitted"] == 4 and summary["yield"] == 1.0
    checked = runner.invoke(app, ["validate", str(out), "--workers", "2"])
    assert checked.exit_code == 0, checked.output
    assert "4 scenarios checked, 0 problems" in checked.output


@pytest.mark.slow
def test_build_demo_fills_a_cache_for_first_runs(tmp_path: Path) -> None:
    summary = pipeline.build_demo(tmp_path / "demo", count=6, seed=1)
    assert summary.admitted == 6
    assert len(ScenarioCache(tmp_path / "demo").entries()) == 6


def test_cli_build_without_config_builds_a_cache_from_the_defaults(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from a01gym.cli.factory import app

    out = tmp_path / "cache"
    built = CliRunner().invoke(app, ["build", "-o", str(out), "--count", "2", "--json"])
    assert built.exit_code == 0, built.output
    summary = json.loads(built.stdout[built.stdout.index("{") :])
    assert summary["candidates"] == 2 and summary["admitted"] == 2
    entries = ScenarioCache(out).entries()
    assert sorted(e.hash for e in entries) == sorted(summary["hashes"])
    assert {e.config_hash for e in entries} == {config.FactoryConfig(count=2).digest()}
