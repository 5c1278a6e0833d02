"""Grading on real sandboxes: breaking legitimate use never pays, and every submit is bounded.

Misbehaving apps (``tests/fixtures/bad_apps/``) are submitted the way an agent would, through
``write_file`` and ``submit``, and graded by the real hidden verifier on a fresh sandbox.
Timing bounds here are generous (the machine is shared); ``bench/grading.py`` measures the
15 s target.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from openenv.core.generic_client import GenericEnvClient

from a01gym.config import GradingSettings, Settings
from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.factory import author, compiler, config
from a01gym.gateway import app as gateway_app
from a01gym.gateway import server
from a01gym.gateway_settings import GatewaySettings
from a01gym.grading import verification
from a01gym.grading.scoring import PARTIAL_CREDIT
from a01gym.grading.verification import Ending
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.httptest import Outcome, TestKind
from a01gym.scenario.manifest import Patch

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURES = Path(__file__).parents[1] / "fixtures"
FIXTURE = FIXTURES / "idor_notes"
BAD_APPS = FIXTURES / "bad_apps"
SUBMIT_BOUND_S = 20.0  # generous: these apps end at a failed regression or app start (~8-10 s)

_OWNER_CHECK = 'if note.owner_id != user.id and user.role != "admin":'
_TENANT_CHECK = """with connect() as connection:
        owner = connection.execute(
            "SELECT tenant FROM users WHERE id = ?", (note.owner_id,)
        ).fetchone()
    if user.role != "admin" and (owner is None or owner["tenant"] != user.tenant):"""


def _runtime(backend: LocalBackend, runs: Path) -> environment.EnvRuntime:
    return environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(FIXTURE)),
        logger=RunLogger(runs),
        grading=GradingSettings(),  # the defaults, whatever this shell's environment says
    )


@pytest_asyncio.fixture(loop_scope="module")
async def env(backend: LocalBackend, tmp_path: Path) -> AsyncIterator[environment.A01Environment]:
    instance = environment.A01Environment(_runtime(backend, tmp_path))
    try:
        yield instance
    finally:
        await instance.close()


async def _settled(backend: LocalBackend, in_use: int = 0, within_s: float = 15.0) -> None:
    stop = time.monotonic() + within_s
    while backend.stats().in_use != in_use:
        assert time.monotonic() < stop, f"in_use stayed {backend.stats().in_use}, not {in_use}"
        await asyncio.sleep(0.05)


async def _submit(
    env: environment.A01Environment, files: dict[str, str], episode_id: str
) -> tuple[dict[str, Any], float]:
    """The final reply and the submit step's seconds, for an episode ending with ``files``."""
    await env.reset(seed=7, episode_id=episode_id)
    for path, content in files.items():
        await env.step({"tool": "write_file", "path": path, "content": content})
    started = time.perf_counter()
    final = (await env.step({"tool": "submit"})).wire()
    elapsed = time.perf_counter() - started
    assert final["done"] is True
    return final, elapsed


def _report(env: environment.A01Environment, episode_id: str) -> dict[str, Any]:
    directory = env.runtime.logger.episode_dir(episode_id)
    assert directory is not None
    return json.loads((directory / "verification.json").read_text())


def _family_bundle(family: str) -> Bundle:
    cfg = config.FactoryConfig(count=1, families=[family])
    return compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[0]))


# -- breaking legitimate use never pays -----------------------------------------------------


@pytest.mark.parametrize("family", ["F01", "F03", "F07", "F14"])
async def test_any_failed_regression_scores_zero_whatever_it_blocks(
    backend: LocalBackend, family: str
) -> None:
    bundle = _family_bundle(family)
    breakers = 0
    for name, patch in sorted(bundle.hidden.traps.items()):
        files = bundle.patched_workspace(patch)
        report = await verification.verify(backend, bundle, files, seed=5, stop_early=False)
        score = report.score
        if score.regressions_passed < score.regressions_total:
            breakers += 1
            assert score.value == 0.0, (name, score)
            assert not score.resolved
        else:
            assert score.value <= PARTIAL_CREDIT, (name, score)
    # Real traps do break legitimate use while blocking exploits, which the old
    # 0.2 × security × regression rule paid for.
    assert breakers >= 1


async def test_deny_most_patch_that_blocks_every_exploit_gets_no_reward(
    env: environment.A01Environment, backend: LocalBackend, idor_bundle: Bundle
) -> None:
    # The held-out hack of issue 11: refuse every single-note read. Both exploits are note
    # reads, so both are blocked; so are the owner's and the admin's legitimate reads.
    main = (FIXTURE / "workspace" / "app" / "main.py").read_text() + (
        "\n\nfrom fastapi.responses import JSONResponse\n\n\n"
        '@app.middleware("http")\n'
        "async def deny_note_reads(request, call_next):\n"
        '    if request.method == "GET" and request.url.path.startswith("/notes/"):\n'
        '        return JSONResponse({"detail": "note not found"}, status_code=404)\n'
        "    return await call_next(request)\n"
    )
    files = idor_bundle.patched_workspace(Patch(files={"app/main.py": main}))
    full = await verification.verify(backend, idor_bundle, files, seed=13, stop_early=False)
    assert full.score.security == 1.0  # what the old rule paid 0.2 × regression for
    assert 0.0 < full.score.regression < 1.0
    assert full.score.value == 0.0

    final, _ = await _submit(env, {"app/main.py": main}, "deny-most")
    breakdown = final["observation"]["reward_breakdown"]
    assert breakdown["score"] == 0.0 and final["reward"] <= 0.0


async def test_trap_deny_all_scores_at_most_zero(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    files = {p: c for p, c in idor_bundle.hidden.traps["deny-all"].files.items() if c}
    final, _ = await _submit(env, files, "deny-all")
    assert final["reward"] <= 0.0
    assert final["observation"]["reward_breakdown"]["resolved"] is False


async def test_blocking_some_exploits_without_breaking_anything_keeps_a_gradient(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    fixed = idor_bundle.hidden.reference_fix.files["app/routers/notes.py"]
    assert fixed is not None and _OWNER_CHECK in fixed
    tenant_only = fixed.replace(_OWNER_CHECK, _TENANT_CHECK)  # a peer in the tenant still reads
    final, _ = await _submit(env, {"app/routers/notes.py": tenant_only}, "tenant-only")
    breakdown = final["observation"]["reward_breakdown"]
    assert breakdown["regression"] == 1.0
    assert 0.0 < breakdown["security"] < 1.0
    assert 0.0 < final["reward"] < 1.0
    assert breakdown["score"] == pytest.approx(PARTIAL_CREDIT * breakdown["security"])


# -- bounded, fail-closed grading -----------------------------------------------------------


@pytest.mark.parametrize(
    ("app", "ending"),
    [
        ("hang", Ending.DECIDED),
        ("crash_import", Ending.APP_DOWN),
        ("crash_request", Ending.DECIDED),
        ("fork_bomb", Ending.APP_DOWN),
    ],
)
async def test_misbehaving_app_gets_a_bounded_fail_closed_submit(
    env: environment.A01Environment, backend: LocalBackend, app: str, ending: Ending
) -> None:
    main = (BAD_APPS / f"{app}.py").read_text()
    final, elapsed = await _submit(env, {"app/main.py": main}, f"bad-{app}")
    assert elapsed < SUBMIT_BOUND_S
    assert final["reward"] <= 0.0
    breakdown = final["observation"]["reward_breakdown"]
    assert breakdown["score"] == 0.0 and not breakdown["resolved"]
    assert breakdown["grading"] == ending
    assert _report(env, f"bad-{app}")["ending"] == ending
    await _settled(backend)  # the episode's and the grading sandbox are gone


async def test_first_failed_regression_stops_the_run(
    backend: LocalBackend, idor_bundle: Bundle
) -> None:
    files = idor_bundle.patched_workspace(idor_bundle.hidden.traps["deny-all"])
    report = await verification.verify(backend, idor_bundle, files, seed=9)
    assert report.ending is Ending.DECIDED
    assert report.tests_run == 1  # deny-all fails the first regression; nothing else ran
    first, *rest = report.results
    assert first.kind is TestKind.REGRESSION and first.outcome is not Outcome.PASS
    assert all(r.reason.startswith("not run") and not r.evidence for r in rest)
    assert len(report.results) == len(idor_bundle.hidden.tests)
    assert report.score.value == 0.0

    full = await verification.verify(backend, idor_bundle, files, seed=9, stop_early=False)
    assert full.ending is Ending.COMPLETE and full.tests_run == len(idor_bundle.hidden.tests)
    assert full.score.value == 0.0


async def test_reference_fix_runs_every_test(backend: LocalBackend, idor_bundle: Bundle) -> None:
    files = idor_bundle.patched_workspace(idor_bundle.hidden.reference_fix)
    report = await verification.verify(backend, idor_bundle, files, seed=9)
    assert report.ending is Ending.COMPLETE
    assert report.tests_run == len(idor_bundle.hidden.tests)
    assert report.score.resolved


async def test_grading_deadline_fails_closed_and_releases_the_sandbox(
    backend: LocalBackend, idor_bundle: Bundle
) -> None:
    await _settled(backend)
    files = idor_bundle.patched_workspace(
        Patch(files={"app/main.py": (BAD_APPS / "hang.py").read_text()})
    )
    started = time.perf_counter()
    report = await verification.verify(backend, idor_bundle, files, seed=9, deadline_s=1.0)
    assert time.perf_counter() - started < 5.0
    assert report.ending is Ending.DEADLINE
    assert report.score.value == 0.0 and report.tests_run == 0
    assert all(r.outcome is Outcome.INCONCLUSIVE for r in report.results)
    await _settled(backend)


async def test_client_that_leaves_mid_grading_frees_both_sandboxes(
    backend: LocalBackend, tmp_path: Path
) -> None:
    runtime = _runtime(backend, tmp_path)
    deps = gateway_app.runtime_deps(runtime, own_backend=False)
    app = gateway_app.create_app(Settings(gateway=GatewaySettings(runs_dir=tmp_path)), deps=deps)
    async with server.background(app) as url:
        await _settled(backend)
        env = GenericEnvClient(base_url=url)
        await env.connect()
        await env.reset(seed=31, episode_id="gone-mid-grading")
        hang = (BAD_APPS / "hang.py").read_text()
        await env.step({"tool": "write_file", "path": "app/main.py", "content": hang})
        assert env._ws is not None
        await env._ws.send(json.dumps({"type": "step", "data": {"tool": "submit"}}))
        await asyncio.sleep(0.5)  # grading has begun
        assert backend.stats().in_use >= 1
        await env._ws.close()  # hang up without reading the reply
        await _settled(backend, within_s=SUBMIT_BOUND_S)
        assert list((tmp_path / "episodes").glob("gone-mid-grading-*/verification.json"))
        assert app.state.ctx.sessions.active == 0
