"""Shared fixtures: the example bundle, a demo cache and real local sandbox backends."""

from __future__ import annotations

import gc
import os
import re
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from a01gym.sandbox import isolation
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle

if TYPE_CHECKING:
    from a01gym.env.environment import A01Environment

FIXTURES = Path(__file__).parent / "fixtures"

# Tiers whose session fixtures own machine-wide things: the Docker engine and its images
# (containers/), control planes, a real node's iptables chains, netns and containerd (k8s/ and
# containers/ both). Each runs whole on one pytest-xdist worker, never beside itself.
MACHINE_TIERS = ("tests/integration/containers/", "tests/integration/k8s/")


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest-xdist worker gets its share of the cores for OpenMP (torch, on CPU).

    torch starts one thread per core, so two workers training at once on two cores ran four
    threads that spin-wait on each other. ``a01gym train --smoke`` beside two busy cores
    (``yes``, as the other worker's tests) took 514 s with torch's default threads and 400 s
    with one (one run each, 2026-12-07; alone it takes 211 s). Subprocesses inherit it: the
    training CLI, the process kubelet's pods, the TRL script. A value already set is kept.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        share = max(1, (os.cpu_count() or 1) // workers)
        os.environ.setdefault("OMP_NUM_THREADS", str(share))


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook; `-p no:xdist` runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``make test`` runs two pytest-xdist workers: alone it left one core of two idle 20-60% of
    the time (``vmstat 30`` over a whole run, 2026-12-02: single-threaded Python tests, waits on
    servers and sandboxes). A unit of work is a module (its module fixtures start once: a
    backend, a trained model, a built cache), or a whole machine tier.

    A scheduler rather than ``--dist loadgroup`` marks: with pytest 9.2 and xdist 3.8 that mode
    spread even an explicitly marked module over both workers (tried here, 2026-12-02).
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TierScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((tier for tier in MACHINE_TIERS if path.startswith(tier)), path)

    return TierScheduling(config, log)


# The lines of a failure's report that say what went wrong: pytest's ``E`` lines, an exception's
# last line, and where an unraisable exception was ignored (inside an exception group's frame).
_TELLING = re.compile(r"^[\s|+-]*(E\s|Exception ignored in|[\w.]*(Error|Warning|Exception)\w*:)")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """A short digest of every failure, printed last but for pytest's one-line summary.

    What CI reports back is the tail of its log: stop 64's CI failed on "multiple unraisable
    exception warnings (2 sub-exceptions)" and said no more, since the full report sits above
    thirty lines of durations. Ten telling lines per failure name what leaked, or what failed.
    """
    reports = [r for key in ("failed", "error") for r in terminalreporter.stats.get(key, [])]
    if not reports:
        return
    terminalreporter.section("failure digest")
    for report in reports:
        lines = [line.strip(" |+-")[:200] for line in report.longreprtext.splitlines()]
        telling = list(dict.fromkeys(line for line in lines if _TELLING.match(line)))
        terminalreporter.write_line(f"{report.nodeid} ({report.when}):")
        for line in telling[-10:] or lines[-5:]:
            terminalreporter.write_line(f"    {line}")


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    """A full garbage collection once a module's tests and fixtures are done.

    An unclosed socket or a pending task is reported when the collector frees it. Left to
    chance, that was in another module, inside ``ast.parse`` (which allocates enough to start a
    collection), where it tripped CPython 3.11.7's "AST constructor recursion depth mismatch"
    SystemError (gh-106905, fixed in 3.11.8): a failure in an innocent test. Collected here,
    the report names the module that leaked. A full collection costs ~0.25 s with the training
    stack loaded, so once per module, not once per test.
    """
    yield
    if nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None):
        gc.collect()


@pytest.fixture
def full_isolation() -> None:
    """Fail (in CI, A01GYM_REQUIRE_ISOLATION=1) or skip when isolation layers are missing."""
    missing = isolation.probe().missing()
    if not missing:
        return
    message = f"full sandbox isolation unavailable here: {'; '.join(missing)}"
    if os.environ.get("A01GYM_REQUIRE_ISOLATION") == "1":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def idor_bundle() -> Bundle:
    return Bundle.load(FIXTURES / "idor_notes")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def backend() -> AsyncIterator[LocalBackend]:
    """One real backend per test module (starting a zygote costs ~0.5 s)."""
    async with LocalBackend(pool_size=2) as started:
        yield started


@pytest_asyncio.fixture(loop_scope="module")
async def env(backend: LocalBackend, tmp_path: Path) -> AsyncIterator[A01Environment]:
    """An environment serving the ``idor_notes`` fixture on the module's backend, its
    episode logs under ``tmp_path``."""
    from a01gym.env import environment, sampler
    from a01gym.env.logger import RunLogger

    runtime = environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(FIXTURES / "idor_notes")),
        logger=RunLogger(tmp_path),
    )
    instance = environment.A01Environment(runtime)
    try:
        yield instance
    finally:
        await instance.close()


@pytest.fixture(scope="session")
def demo_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 12-scenario demo-config cache (seed 0), built once per session: copy it before use.

    Building it gates every candidate (~40 s); the training, docs and chart tests all serve the
    same one, each from its own copy (serving and training write beside the index). The
    solver test's 50-scenario cache builds on a copy too (its first 12 candidates are these):
    change the count or the seed there as well.
    """
    from a01gym.factory import pipeline

    path = tmp_path_factory.mktemp("demo-cache") / "cache"
    summary = pipeline.build_demo(path, count=12, seed=0)
    assert summary.admitted >= 10, summary
    return path
