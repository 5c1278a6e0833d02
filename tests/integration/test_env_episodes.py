"""Real episodes on real sandboxes: reward integrity, hidden-score secrecy, bad input, failures.

Every patch is applied the way an agent would, through ``write_file`` actions, and graded by
the real hidden verifier on a fresh sandbox with a re-randomised world.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from a01gym.env import environment, sampler
from a01gym.env.logger import RunLogger
from a01gym.grading.scoring import PARTIAL_CREDIT
from a01gym.sandbox.host.local import LocalBackend
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.manifest import Patch

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "idor_notes"


async def _apply(env: environment.A01Environment, patch: Patch) -> list[dict[str, Any]]:
    replies = []
    for path, content in patch.files.items():
        assert content is not None
        out = await env.step({"tool": "write_file", "path": path, "content": content})
        replies.append(out.wire())
    return replies


async def _grade(env: environment.A01Environment, patch: Patch | None) -> dict[str, Any]:
    await env.reset(seed=11)
    if patch is not None:
        for reply in await _apply(env, patch):
            assert reply["reward"] is None and reply["observation"]["reward_breakdown"] is None
    final = (await env.step({"tool": "submit"})).wire()
    assert final["done"] is True
    return final


async def test_reference_fix_scores_one(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    final = await _grade(env, idor_bundle.hidden.reference_fix)
    breakdown = final["observation"]["reward_breakdown"]
    assert final["reward"] == 1.0 and breakdown["resolved"] is True
    assert all(t["passed"] for t in breakdown["tests"])
    assert {t["outcome"] for t in breakdown["tests"]} == {"blocked", "works"}
    assert {t["id"] for t in breakdown["tests"]} == {t.id for t in idor_bundle.hidden.tests}


async def test_no_op_scores_zero(env: environment.A01Environment) -> None:
    final = await _grade(env, None)
    assert final["reward"] == 0.0
    assert final["observation"]["reward_breakdown"]["security"] == 0.0


@pytest.mark.parametrize(
    "trap", ["deny-all", "admin-break", "hardcode-visible-ids", "client-trust", "delete-route"]
)
async def test_every_trap_scores_at_most_partial_credit(
    env: environment.A01Environment, idor_bundle: Bundle, trap: str
) -> None:
    final = await _grade(env, idor_bundle.hidden.traps[trap])
    assert final["reward"] <= PARTIAL_CREDIT
    assert final["observation"]["reward_breakdown"]["resolved"] is False


async def test_hardcoding_visible_ids_passes_visible_tests_but_fails_hidden_ones(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    await env.reset(seed=3)
    await _apply(env, idor_bundle.hidden.traps["hardcode-visible-ids"])
    visible = (await env.step({"tool": "run_tests"})).wire()["observation"]
    assert {t["id"]: t["outcome"] for t in visible["result"]["tests"]} == {
        "visible-owner-reads": "works",
        "visible-peer-read": "blocked",  # the visible exploit looks blocked
    }
    breakdown = (await env.step({"tool": "submit"})).wire()["observation"]["reward_breakdown"]
    assert not breakdown["resolved"]
    assert not all(t["passed"] for t in breakdown["tests"] if t["kind"] == "exploit")
    assert "exploited" in {t["outcome"] for t in breakdown["tests"]}


async def test_no_tool_reveals_a_score_before_the_terminal_step(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    await env.reset(seed=5)
    actions: list[Any] = [
        {"tool": "list_files"},
        {"tool": "read_file", "path": "app/routers/notes.py"},
        {"tool": "search", "pattern": "owner_id"},
        {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "alice"},
        {"tool": "run_tests"},
        {"tool": "verify"},
        {"tool": "reward"},
        {"tool": "read_file", "path": "../hidden.json"},
        {"tool": "read_file", "path": "/etc/passwd"},
        {"tool": "search", "pattern": "hidden"},
    ]
    hidden_ids = [t.id for t in idor_bundle.hidden.tests]
    for action in actions:
        wire = (await env.step(action)).wire()
        assert wire["reward"] is None and wire["done"] is False
        assert wire["observation"]["reward_breakdown"] is None
        assert not any(test_id in str(wire) for test_id in hidden_ids)
    for name in ("submit_and_score", "verify", "state"):
        out, error = await env.call_tool(name, {})
        assert out.reward is None and error == {
            "error_type": "tool_not_found",
            "message": f"Unknown tool: {name!r}",
        }
    state = env.state().model_dump()
    assert state["reward"] is None and "score" not in state


async def test_steps_after_done_are_refused(env: environment.A01Environment) -> None:
    await env.reset(seed=1)
    await env.step({"tool": "submit"})
    for action in ({"tool": "list_files"}, {"tool": "submit"}):
        wire = (await env.step(action)).wire()
        assert wire["observation"]["error"]["code"] == "episode_done"
        assert wire["reward"] is None and wire["done"] is True


async def test_the_first_observations_examples_run_as_written(
    env: environment.A01Environment,
) -> None:
    first = (await env.reset(seed=12)).wire()["observation"]
    examples = [
        json.loads(line.split("   # ")[0])
        for line in first["output"].splitlines()
        if line.startswith('{"tool"')
    ]
    assert len(examples) == 8
    for action in examples:
        if action["tool"] in ("read_file", "search", "http_request", "list_files"):
            observation = (await env.step(action)).wire()["observation"]
            assert observation["error"] is None, (action, observation["output"])
            if action["tool"] == "http_request":
                assert observation["result"]["status"] == 200, observation["output"]
            if action["tool"] == "search":
                assert observation["result"]["matches"], observation["output"]


async def test_bad_input_is_an_observation_and_counts_as_invalid(
    env: environment.A01Environment,
) -> None:
    await env.reset(seed=2)
    big = "x" * (70 * 1024)
    cases = [
        ({"tool": "read_file", "path": "../../etc/passwd"}, "path_invalid"),
        ({"tool": "write_file", "path": "/tmp/evil.py", "content": "x"}, "path_invalid"),
        ({"tool": "write_file", "path": "app/big.py", "content": big}, "too_large"),
        (
            {"tool": "edit_file", "path": "app/routers/notes.py", "old": "connection", "new": "c"},
            "edit_not_unique",
        ),
        (
            {"tool": "edit_file", "path": "app/routers/notes.py", "old": "not in file", "new": "c"},
            "edit_not_found",
        ),
        ({"tool": "read_file", "path": "app/missing.py"}, "not_found"),
        ({"tool": "read_file", "path": "app/main.py", "start_line": 9999}, "invalid_action"),
        ({"tool": "search", "pattern": "owner_id", "path": "app/nowhere"}, "not_found"),
        (
            {"tool": "http_request", "method": "GET", "path": "/", "actor": "mallory"},
            "unknown_actor",
        ),
        ({"tool": "launch_missiles"}, "unknown_tool"),
        ({"tool": "read_file"}, "invalid_action"),
        ({"tool": "submit", "extra": 1}, "invalid_action"),
    ]
    for action, code in cases:
        wire = (await env.step(action)).wire()
        assert wire["observation"]["error"]["code"] == code, action
        assert wire["done"] is False
    assert env.state().invalid_actions == len(cases)
    final = (await env.step({"tool": "submit"})).wire()
    penalties = final["observation"]["reward_breakdown"]["penalties"]
    assert penalties["invalid_actions"] == pytest.approx(0.1)  # capped by manifest.reward


async def test_a_repeated_text_is_edited_by_its_line_in_the_sandbox_and_the_episode(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    """``line`` chooses one occurrence of repeated text; the sandbox's file and the gateway's
    ``read_file`` (answered from the episode) agree on which one changed."""
    await env.reset(seed=5)
    path = "app/routers/notes.py"
    text = idor_bundle.workspace[path].decode()
    old = "    with connect() as connection:\n"
    starts = [n for n, line in enumerate(text.splitlines(keepends=True), 1) if line == old]
    assert len(starts) >= 2  # the fixture's handlers each open a connection
    edit = {"tool": "edit_file", "path": path, "old": old, "new": old + "        pass  # chosen\n"}
    refused = (await env.step(edit)).wire()["observation"]["error"]
    assert refused["code"] == "edit_not_unique"
    assert ", ".join(map(str, starts)) in refused["message"]
    wrong = (await env.step({**edit, "line": starts[-1] + 1})).wire()["observation"]["error"]
    assert wrong["code"] == "edit_not_found" and str(starts[-1]) in wrong["message"]
    done = (await env.step({**edit, "line": starts[1]})).wire()["observation"]
    assert done["error"] is None, done["output"]
    read = (await env.step({"tool": "read_file", "path": path})).wire()["observation"]
    changed = read["result"]["content"].splitlines()
    assert [n for n, line in enumerate(changed, 1) if line.endswith("# chosen")] == [starts[1] + 1]
    grep = (await env.step({"tool": "search", "pattern": "# chosen"})).wire()["observation"]
    assert [m["line"] for m in grep["result"]["matches"]] == [starts[1] + 1]  # the sandbox's copy


async def test_edit_that_breaks_startup_reports_the_traceback_once_without_host_paths(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    await env.reset(seed=4)
    main = idor_bundle.workspace["app/main.py"].decode()
    helper = "def check():\n    return undefined_name\n"
    await env.step({"tool": "write_file", "path": "app/helper.py", "content": helper})
    broken = "from app.helper import check\ncheck()\n" + main
    wire = (await env.step({"tool": "write_file", "path": "app/main.py", "content": broken})).wire()
    observation = wire["observation"]
    assert observation["error"]["code"] == "app_start_failed"
    output = observation["output"]
    frames = [line.strip() for line in output.splitlines() if line.strip().startswith("File ")]
    assert frames == [
        'File "app/main.py", line 2, in <module>',
        'File "app/helper.py", line 2, in check',
    ]
    assert "NameError: name 'undefined_name' is not defined" in output
    for host in (sys.prefix, sys.base_prefix, "/dev/shm", "/tmp", "a01gym", "importlib"):
        assert host not in output, host
    later = (
        await env.step({"tool": "http_request", "method": "GET", "path": "/notes", "actor": "bob"})
    ).wire()["observation"]
    assert later["error"]["code"] == "app_not_running"
    assert "Traceback" not in later["output"] and "shown when it happened" in later["output"]
    final = (await env.step({"tool": "submit"})).wire()
    breakdown = final["observation"]["reward_breakdown"]
    assert breakdown["app_started"] is False and breakdown["penalties"]["broken_app"] > 0
    assert final["reward"] < 0


async def test_a_request_that_fails_shows_the_apps_traceback_from_the_workspace(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    await env.reset(seed=5)
    main = idor_bundle.workspace["app/main.py"].decode()
    route = "\n\n@app.get('/boom')\ndef boom():\n    return 1 / 0\n"
    await env.step({"tool": "write_file", "path": "app/main.py", "content": main + route})
    request = {"tool": "http_request", "method": "GET", "path": "/boom", "actor": "bob"}
    observation = (await env.step(request)).wire()["observation"]
    assert observation["result"]["status"] == 500
    log = observation["result"]["app_log"]
    assert 'File "app/main.py", line' in log and "ZeroDivisionError" in log
    assert log.count("File ") == 1 and sys.prefix not in log
    assert log in observation["output"]
    again = (await env.step(request)).wire()["observation"]
    assert again["result"]["app_log"].count("Traceback") == 1  # this request's only
    fine = {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "bob"}
    assert (await env.step(fine)).wire()["observation"]["result"]["app_log"] == ""


async def test_an_actor_can_act_through_the_session_cookie_as_its_browser_would(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    first = (await env.reset(seed=6)).wire()["observation"]
    bearer = next(a for a in first["result"]["actors"] if a["name"] == "bob")["headers"]
    token = bearer["Authorization"].removeprefix("Bearer ")
    main = idor_bundle.workspace["app/main.py"].decode()
    echo = (
        "\n\nfrom fastapi import Request as _Request\n\n\n@app.post('/echo')\n"
        "def echo(request: _Request):\n    return {'cookies': dict(request.cookies), "
        "'authorization': request.headers.get('authorization'), "
        "'csrf': request.headers.get('x-csrf-token')}\n"
    )
    await env.step({"tool": "write_file", "path": "app/main.py", "content": main + echo})
    request = {
        "tool": "http_request",
        "method": "POST",
        "path": "/echo",
        "actor": "bob",
        "auth": "cookie",
        "headers": {"Cookie": "csrf_token=abc", "X-CSRF-Token": "abc"},
    }
    observation = (await env.step(request)).wire()["observation"]
    assert observation["error"] is None, observation["output"]
    assert json.loads(observation["result"]["body"]) == {
        "cookies": {"session": token, "csrf_token": "abc"},
        "authorization": None,
        "csrf": "abc",
    }
    assert "as bob (session cookie) -> HTTP 200" in observation["output"]
    as_bearer = (await env.step({**request, "auth": "bearer"})).wire()["observation"]
    body = json.loads(as_bearer["result"]["body"])
    assert body["authorization"] == f"Bearer {token}" and "session" not in body["cookies"]


async def test_an_edit_that_breaks_a_route_is_caught_by_the_restart_check(
    env: environment.A01Environment, idor_bundle: Bundle
) -> None:
    # The module imports and the app starts; only building the route schema fails.
    await env.reset(seed=8)
    main = idor_bundle.workspace["app/main.py"].decode()
    broken = (
        "\n\nfrom pydantic import BaseModel as _Base, ConfigDict as _Config\n\n\n"
        "class _Opaque:\n    pass\n\n\nclass _Out(_Base):\n"
        "    model_config = _Config(arbitrary_types_allowed=True)\n    handle: _Opaque\n\n\n"
        "@app.get('/opaque', response_model=_Out)\ndef opaque():\n    return None\n"
    )
    fine = await env.step({"tool": "write_file", "path": "app/main.py", "content": main})
    assert "serves requests (GET /openapi.json: HTTP 200)" in fine.wire()["observation"]["output"]
    step = {"tool": "write_file", "path": "app/main.py", "content": main + broken}
    observation = (await env.step(step)).wire()["observation"]
    assert observation["error"]["code"] == "app_broken", observation["output"]
    assert "GET /openapi.json answers HTTP 500" in observation["output"]
    assert "_Opaque" in observation["output"]  # the app's own log names the culprit
    assert observation["result"]["check"] == {"path": "/openapi.json", "status": 500}


async def test_killed_sandbox_is_replaced_and_changes_survive(
    env: environment.A01Environment, idor_bundle: Bundle, backend: LocalBackend
) -> None:
    await env.reset(seed=6)
    await _apply(env, idor_bundle.hidden.reference_fix)
    sandbox = env._episode.sandbox  # the test started this backend and its sandboxes
    assert sandbox is not None
    os.kill(sandbox.pid, signal.SIGKILL)
    wire = (await env.step({"tool": "list_files"})).wire()
    assert wire["observation"]["error"]["code"] == "sandbox_lost"
    assert "replaced" in wire["observation"]["output"]
    wire = (await env.step({"tool": "read_file", "path": "app/routers/notes.py"})).wire()
    assert (
        wire["observation"]["result"]["content"]
        in idor_bundle.hidden.reference_fix.files["app/routers/notes.py"]
    )
    final = (await env.step({"tool": "submit"})).wire()
    assert final["reward"] == 1.0


async def test_sandbox_is_released_when_an_episode_is_abandoned(
    env: environment.A01Environment, backend: LocalBackend
) -> None:
    before = backend.stats().in_use
    await env.reset(seed=8)
    assert backend.stats().in_use == before + 1
    await env.reset(seed=9)  # releases the last episode's sandbox in the background
    await env.runtime.releases.drain()
    assert backend.stats().in_use == before + 1
    await env.close()
    assert backend.stats().in_use == before


async def test_episode_log_and_artifacts_are_written(
    env: environment.A01Environment, tmp_path: Path
) -> None:
    reset = await env.reset(seed=10, episode_id="logged-episode", agent="tester")
    scenario = reset.observation.result["scenario"]
    await env.step({"tool": "list_files"})
    await env.step({"tool": "submit"})
    files = RunLogger(tmp_path).artifacts("logged-episode")
    assert files is not None
    assert files["steps.jsonl"].count("\n") == 4  # reset, 2 steps, episode
    folder = tmp_path / "episodes" / f"logged-episode-{scenario[:8]}"
    summary = json.loads(files["summary.json"])
    assert (summary["episode_id"], summary["agent"], summary["scenario"]) == (
        "logged-episode",
        "tester",
        scenario,
    )
    verification = json.loads((folder / "verification.json").read_text())
    assert [(t["id"], t["outcome"], t["passed"]) for t in verification["tests"]] == [
        (t["id"], t["outcome"], t["passed"]) for t in summary["reward_breakdown"]["tests"]
    ]


async def test_warm_spares_serve_repeat_resets_and_are_released(
    backend: LocalBackend, idor_bundle: Bundle, tmp_path: Path
) -> None:
    from a01gym.env.warm import WarmSpares

    baseline = backend.stats().in_use
    runtime = environment.EnvRuntime(
        backend=backend,
        sampler=sampler.CurriculumSampler(sampler.DirectorySource(FIXTURE)),
        spares=WarmSpares(backend, per_scenario=1, max_total=2),
    )
    env = environment.A01Environment(runtime)
    await env.reset(seed=1)
    assert runtime.spares is not None
    for _ in range(200):  # one episode spare and one grading spare
        if runtime.spares.count == 2:
            break
        await asyncio.sleep(0.02)
    assert runtime.spares.count == 2
    await env.reset(seed=2)  # takes the episode spare: a pristine, seeded app
    assert runtime.spares.count == 1
    wire = (
        await env.step(
            {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "alice"}
        )
    ).wire()
    assert wire["observation"]["result"]["status"] == 200
    final = await _grade_current(env, idor_bundle.hidden.reference_fix)
    assert final["reward"] == 1.0
    await env.close()
    await runtime.close()
    assert backend.stats().in_use == baseline


async def _grade_current(env: environment.A01Environment, patch: Patch) -> dict[str, Any]:
    await _apply(env, patch)
    return (await env.step({"tool": "submit"})).wire()
