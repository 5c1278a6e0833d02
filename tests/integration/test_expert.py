"""ask_expert on real episodes (real sandboxes) against a stub OpenAI-compatible endpoint.

The expert endpoint is :mod:`expert_stub`: a real HTTP server on 127.0.0.1 that records every
prompt (no model can run here). The scenarios are real: the idor-notes fixture, a copy of it
whose ``hidden.json`` carries explicit marker strings, and bundles compiled by the factory.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.errors import ConfigError
from a01gym.expert_settings import ExpertSettings, ShapingSettings
from a01gym.factory import author, compiler
from a01gym.factory import config as factory_config
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle
from expert_stub import ANSWER, StubExpert, running_stub

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"
MARKER = "HIDDEN-MARKER-7f3a9c"


@pytest_asyncio.fixture(loop_scope="module")
async def stub() -> AsyncIterator[StubExpert]:
    async with running_stub() as running:
        yield running


def _settings(url: str, **overrides: Any) -> ExpertSettings:
    values: dict[str, Any] = {"base_url": url, "model": "stub-expert", "api_key": "sk-test"}
    return ExpertSettings.model_validate(values | overrides)


def _env(
    backend: LocalBackend, source: Path, tmp_path: Path, expert: ExpertSettings
) -> environment.A01Environment:
    runtime = environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(source)),
        logger=RunLogger(tmp_path / "runs"),
        expert_settings=expert,
    )
    return environment.A01Environment(runtime)


async def _close(env: environment.A01Environment) -> None:
    await env.close()
    await env.runtime.close()


# -- scenarios and their canaries --------------------------------------------------------------
def _marked(bundle: Bundle) -> Bundle:
    """``bundle`` with marker strings in every part of ``hidden.json``."""
    hidden = bundle.hidden
    fix = hidden.reference_fix.model_copy(
        update={
            "description": f"{MARKER}-fix-description",
            "files": {
                path: f"# {MARKER}-fix-file\n{content}"
                for path, content in hidden.reference_fix.files.items()
            },
        }
    )
    traps = {
        name: trap.model_copy(update={"description": f"{MARKER}-trap-{name}"})
        for name, trap in hidden.traps.items()
    }
    tests = [t.model_copy(update={"id": f"{MARKER}-test-{i}"}) for i, t in enumerate(hidden.tests)]
    labels = {**hidden.labels, "domain": f"{MARKER}-label"}
    marked = hidden.model_copy(
        update={
            "reference_fix": fix,
            "traps": traps,
            "tests": tests,
            "labels": labels,
        }
    )
    return dataclasses.replace(bundle, hidden=marked).with_hash()


def _canaries(bundle: Bundle) -> list[str]:
    """Strings of ``hidden.json`` that appear nowhere the agent can look (workspace files and
    ``manifest.json``): hidden test ids and steps, patch descriptions, reference-fix and trap
    lines, fixture templates."""
    visible = "\n".join(c.decode(errors="replace") for c in bundle.workspace.values())
    visible += bundle.manifest.model_dump_json()
    hidden = bundle.hidden
    found: set[str] = {t.id for t in hidden.tests}
    found |= {json.dumps(step.model_dump(mode="json")) for t in hidden.tests for step in t.steps}
    found |= {p.description for p in [hidden.reference_fix, *hidden.traps.values()]}
    for patch in [hidden.reference_fix, *hidden.traps.values()]:
        for content in patch.files.values():
            found |= {line.strip() for line in (content or "").splitlines()}
    found |= {json.dumps(row) for rows in hidden.fixture.tables.values() for row in rows}
    return sorted(c for c in found if len(c) >= 16 and c not in visible)


def _scenarios(root: Path) -> list[Bundle]:
    idor = Bundle.load(FIXTURE)
    bundles = [idor, _marked(idor)]
    for family in ("F01", "F04"):
        cfg = factory_config.FactoryConfig.model_validate({"count": 1, "families": [family]})
        spec = author.TemplateAuthor().draft(author.plan(cfg)[0])
        bundles.append(compiler.compile_bundle(spec))
    for index, bundle in enumerate(bundles):
        bundle.write(root / f"s{index}")
    return bundles


async def _explore_and_ask(env: environment.A01Environment, bundle: Bundle) -> list[dict]:
    """An agent that reads everything it can, probes the app, errs, asks, edits, asks, submits."""
    split = bundle.hidden.labels.get("split", "train")
    first = await env.reset(seed=3, scenario=bundle.manifest.content_hash, split=split, expert=True)
    assert first.observation.result["expert_calls"] == 3
    replies = [first.wire()]
    actions: list[dict[str, Any]] = [{"tool": "list_files"}]
    actions += [{"tool": "read_file", "path": path} for path in sorted(bundle.workspace)]
    actions += [{"tool": "run_tests"}, {"tool": "search", "pattern": "def "}]
    for test in bundle.manifest.visible_tests[:2]:
        step = test.steps[0]
        if "{{" not in step.path:
            actions.append(
                {
                    "tool": "http_request",
                    "method": step.method,
                    "path": step.path,
                    "actor": step.actor,
                }
            )
    actions += [
        {"tool": "read_file", "path": "no/such/file.py"},
        {"tool": "ask_expert", "question": "Which handler misses its access check?"},
        {"tool": "write_file", "path": "NOTES.md", "content": "agent notes: checking owners\n"},
        {"tool": "ask_expert", "question": "Is my plan right?"},
        {"tool": "submit"},
    ]
    for action in actions:
        replies.append((await env.step(action)).wire())
    return replies


async def test_expert_prompts_never_carry_hidden_data(
    backend: LocalBackend, stub: StubExpert, tmp_path: Path
) -> None:
    bundles = _scenarios(tmp_path / "scenarios")
    env = _env(backend, tmp_path / "scenarios", tmp_path, _settings(stub.url))
    stub.requests.clear()
    try:
        for bundle in bundles:
            before = len(stub.requests)
            replies = await _explore_and_ask(env, bundle)
            answers = [r for r in replies if r["observation"]["tool"] == "ask_expert"]
            assert [a["observation"]["error"] for a in answers] == [None, None]
            assert ANSWER in answers[0]["observation"]["output"]
            assert replies[-1]["done"] is True
            prompts = stub.prompts[before:]
            assert len(prompts) == 2
            canaries = _canaries(bundle)
            assert len(canaries) >= 10, "too few canaries: the check would prove little"
            for prompt in prompts:
                leaked = [c for c in canaries if c in prompt]
                assert not leaked, f"hidden data reached the expert: {leaked[:3]}"
                assert MARKER not in prompt
                # ... while what the agent saw is there: the task, the files, its own steps.
                assert bundle.manifest.policy.splitlines()[0].strip() in prompt
                assert "Which handler misses its access check?" in prompt or "plan" in prompt
                assert "no/such/file.py" in prompt
                for test in bundle.manifest.visible_tests:
                    assert test.id in prompt
            assert "agent notes: checking owners" in prompts[1]
        assert all(a == "Bearer sk-test" for a in stub.authorizations)
        assert {r["model"] for r in stub.requests} == {"stub-expert"}
    finally:
        await _close(env)


async def test_expert_is_off_unless_reset_or_settings_offer_it(
    backend: LocalBackend, stub: StubExpert, tmp_path: Path
) -> None:
    env = _env(backend, FIXTURE, tmp_path, _settings(stub.url))
    stub.requests.clear()
    try:
        first = await env.reset(seed=1)
        assert first.observation.result["expert_calls"] == 0
        assert "ask_expert" not in first.observation.result["tools"]
        reply = (await env.step({"tool": "ask_expert", "question": "help?"})).wire()
        assert reply["observation"]["error"]["code"] == "expert_off"
        assert stub.requests == []
        final = (await env.step({"tool": "submit"})).wire()
        shaping = final["observation"]["reward_breakdown"]["shaping"]
        assert shaping == {
            "expert_offered": False,
            "expert_calls": 0,
            "solo_bonus": 0.0,
            "recovery_bonus": 0.0,
            "blind_call_penalty": 0.0,
            "total": 0.0,
        }
    finally:
        await _close(env)
    unconfigured = _env(backend, FIXTURE, tmp_path, ExpertSettings())
    try:
        with pytest.raises(ConfigError, match="no expert endpoint"):
            await unconfigured.reset(seed=1, expert=True)
    finally:
        await _close(unconfigured)


async def test_expert_budget_is_per_episode(
    backend: LocalBackend, stub: StubExpert, tmp_path: Path
) -> None:
    env = _env(backend, FIXTURE, tmp_path, _settings(stub.url, max_calls=2, enabled=True))
    stub.requests.clear()
    try:
        for _ in range(2):  # a new episode gets a new budget
            first = await env.reset(seed=2)
            assert first.observation.result["expert_calls"] == 2
            codes, lefts = [], []
            for _ in range(3):
                observation = (await env.step({"tool": "ask_expert", "question": "q"})).wire()
                observation = observation["observation"]
                codes.append(observation["error"] and observation["error"]["code"])
                lefts.append(observation["result"]["calls_left"])
            assert codes == [None, None, "expert_budget"] and lefts == [1, 0, 0]
            assert (await env.step({"tool": "list_files"})).observation.error is None
        assert len(stub.requests) == 4
    finally:
        await _close(env)


@pytest.mark.parametrize(
    ("mode", "outcome", "words"),
    [
        ("dead", "unreachable", "unreachable"),
        ("slow", "timeout", "did not answer within"),
        ("bad_json", "bad_response", "not a chat completion"),
        ("http_500", "http_error", "HTTP 500"),
    ],
)
async def test_a_failing_expert_is_an_error_observation_and_the_episode_goes_on(
    backend: LocalBackend,
    stub: StubExpert,
    tmp_path: Path,
    idor_bundle: Bundle,
    mode: str,
    outcome: str,
    words: str,
) -> None:
    if mode == "dead":
        from a01gym.gateway.server import free_port

        url = f"http://127.0.0.1:{free_port('127.0.0.1')}/v1"  # nothing listens there
    else:
        url, stub.mode = stub.url, mode  # type: ignore[assignment]
    env = _env(backend, FIXTURE, tmp_path, _settings(url, timeout_s=0.5, max_calls=1))
    try:
        await env.reset(seed=4, expert=True)
        failed = (await env.step({"tool": "ask_expert", "question": "help?"})).wire()
        observation = failed["observation"]
        assert failed["done"] is False and observation["phase"] == "explore"
        assert observation["error"]["code"] == "expert_unavailable"
        assert observation["result"]["outcome"] == outcome
        assert (
            words in observation["output"]
            and "carry on with the other tools" in observation["output"]
        )
        assert observation["result"]["calls_left"] == 1  # a failed question costs no budget
        assert (await env.step({"tool": "list_files"})).observation.error is None
        for path, content in idor_bundle.hidden.reference_fix.files.items():
            await env.step({"tool": "write_file", "path": path, "content": content})
        final = (await env.step({"tool": "submit"})).wire()
        assert final["reward"] == 1.0
        assert final["observation"]["reward_breakdown"]["shaping"]["solo_bonus"] == 0.0
    finally:
        stub.mode = "answer"
        await _close(env)


# -- shaping -----------------------------------------------------------------------------------
SHAPING = ShapingSettings(
    solo_bonus=0.1, recovery_bonus=0.05, blind_call_penalty=0.03, explore_steps=2, stall_steps=6
)


async def _play(
    env: environment.A01Environment,
    bundle: Bundle,
    before_fix: list[dict[str, Any]],
    *,
    expert: bool,
) -> dict[str, Any]:
    await env.reset(seed=6, expert=expert)
    for action in before_fix:
        await env.step(action)
    for path, content in bundle.hidden.reference_fix.files.items():
        await env.step({"tool": "write_file", "path": path, "content": content})
    final = (await env.step({"tool": "submit"})).wire()
    assert final["done"] is True
    return final


ASK = {"tool": "ask_expert", "question": "what now?"}
READ = {"tool": "read_file", "path": "app/routers/notes.py"}
ERROR = {"tool": "read_file", "path": "app/nope.py"}


@pytest.mark.parametrize(
    ("case", "before_fix", "expert", "expected"),
    [
        ("off", [READ, READ], False, (False, 0, 0.0, 0.0, 0.0)),
        ("solo", [READ, READ], True, (True, 0, 0.1, 0.0, 0.0)),
        ("recovered", [READ, READ, ERROR, ASK], True, (True, 1, 0.0, 0.05, 0.0)),
        ("stalled", [READ] * 6 + [ASK], True, (True, 1, 0.0, 0.05, 0.0)),
        ("blind", [ASK, READ], True, (True, 1, 0.0, 0.0, 0.03)),
        ("blind-after-error", [ERROR, ASK], True, (True, 1, 0.0, 0.05, 0.03)),
        ("asked-while-fine", [READ, READ, ASK], True, (True, 1, 0.0, 0.0, 0.0)),
    ],
)
async def test_shaping_components_are_logged_apart_from_the_score(
    backend: LocalBackend,
    stub: StubExpert,
    tmp_path: Path,
    idor_bundle: Bundle,
    case: str,
    before_fix: list[dict[str, Any]],
    expert: bool,
    expected: tuple[bool, int, float, float, float],
) -> None:
    env = _env(backend, FIXTURE, tmp_path, _settings(stub.url, shaping=SHAPING))
    try:
        final = await _play(env, idor_bundle, before_fix, expert=expert)
    finally:
        await _close(env)
    breakdown = final["observation"]["reward_breakdown"]
    shaping = breakdown["shaping"]
    got = (
        shaping["expert_offered"],
        shaping["expert_calls"],
        shaping["solo_bonus"],
        shaping["recovery_bonus"],
        shaping["blind_call_penalty"],
    )
    assert got == expected, case
    assert shaping["total"] == pytest.approx(expected[2] + expected[3] - expected[4])
    # the security x regression score and the reward are the expert-free ones
    assert breakdown["score"] == 1.0 and breakdown["resolved"] is True
    assert final["reward"] == breakdown["reward"] == 1.0 - breakdown["penalties"]["invalid_actions"]
    episode_dir = next((tmp_path / "runs").rglob("summary.json")).parent
    summary = json.loads((episode_dir / "summary.json").read_text())
    assert summary["shaping"] == shaping and summary["reward"] == final["reward"]


async def test_expert_metrics_reach_prometheus_through_the_gateway(
    backend: LocalBackend, stub: StubExpert, tmp_path: Path
) -> None:
    import httpx
    from openenv.core.generic_client import GenericEnvClient

    from a01gym.config import Settings
    from a01gym.gateway import app as gateway_app
    from a01gym.gateway import server
    from a01gym.gateway_settings import GatewaySettings

    env = _env(backend, FIXTURE, tmp_path, _settings(stub.url, max_calls=1))
    deps = gateway_app.runtime_deps(env.runtime, own_backend=False)
    app = gateway_app.create_app(Settings(gateway=GatewaySettings(runs_dir=tmp_path)), deps=deps)
    async with server.background(app) as url:
        async with GenericEnvClient(base_url=url) as client:
            await client.reset(seed=7, expert=True)
            answered = await client.step({"tool": "ask_expert", "question": "where?"})
            assert ANSWER in answered.observation["output"]
            spent = await client.step({"tool": "ask_expert", "question": "again?"})
            assert spent.observation["error"]["code"] == "expert_budget"
            await client.step({"tool": "submit"})
        async with httpx.AsyncClient(base_url=url) as http:
            text = (await http.get("/metrics")).text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("a01gym_expert_calls_total", (("outcome", "ok"),))] == 1
    assert samples[("a01gym_expert_calls_total", (("outcome", "budget"),))] == 1
    assert samples[("a01gym_expert_call_duration_seconds_count", ())] == 1
    assert samples[("a01gym_expert_tokens_total", (("kind", "completion"),))] == len(ANSWER.split())
    assert samples[("a01gym_expert_tokens_total", (("kind", "prompt"),))] > 100
    assert samples[("a01gym_expert_shaping_episodes_total", (("component", "offered"),))] == 1
