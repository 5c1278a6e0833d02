"""The hidden-test runner's re-seeding, in a real sandbox.

The runner sends a world once; each test's first call (a request or a database check) asks
the supervisor to restore it, which it skips when nothing wrote the database. A GET that
writes (here ``/hit``) must still get the next test a fresh world.
"""

from __future__ import annotations

import pytest

from a01gym.grading import runner
from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import ControlError
from a01gym.scenario.httptest import HttpTest, Outcome
from a01gym.scenario.manifest import Fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

COUNTER_APP = b"""
import os, sqlite3
from fastapi import FastAPI

DB = os.environ["APP_DB_PATH"]
with sqlite3.connect(DB) as connection:
    connection.execute("CREATE TABLE IF NOT EXISTS hits (id INTEGER PRIMARY KEY)")
app = FastAPI()


@app.get("/hit")
def hit() -> dict:
    with sqlite3.connect(DB) as connection:
        connection.execute("INSERT INTO hits DEFAULT VALUES")
    return {"ok": True}


@app.get("/count")
def count() -> dict:
    with sqlite3.connect(DB) as connection:
        return {"n": connection.execute("SELECT COUNT(*) FROM hits").fetchone()[0]}
"""


def _test(test_id: str, path: str, expect: list[dict]) -> HttpTest:
    return HttpTest.model_validate(
        {
            "id": test_id,
            "kind": "regression",
            "steps": [{"path": path, "expect": expect}],
        }
    )


async def _load(sandbox) -> None:
    status = await sandbox.client.load_workspace(
        {"main.py": COUNTER_APP}, entrypoint="main:app", start=True
    )
    assert status.state is protocol.AppState.RUNNING, status.error


async def _suite(backend, manifest, tests, seed_calls: list[bool] | None = None):
    sandbox = await backend.acquire()
    try:
        await _load(sandbox)
        if seed_calls is not None:
            seed = sandbox.client.seed

            async def counted(request: protocol.SeedRequest) -> bool:
                seed_calls.append(await seed(request))
                return seed_calls[-1]

            sandbox.client.seed = counted
        fixture = Fixture(tables={"hits": []})
        return await runner.run_suite(sandbox.client, manifest, fixture, tests, seed=3)
    finally:
        await backend.release(sandbox)


async def test_a_test_after_a_writing_get_sees_a_fresh_world(backend, idor_bundle):
    zero = [{"type": "json_equals", "path": "n", "value": 0}]
    tests = [
        _test("count-1", "/count", zero),
        _test("hit", "/hit", [{"type": "status_in", "statuses": [200]}]),
        _test("count-2", "/count", zero),
    ]
    seed_calls: list[bool] = []
    results = await _suite(backend, idor_bundle.manifest, tests, seed_calls)
    assert [r.test_id for r in results] == ["count-1", "hit", "count-2"]
    assert all(r.outcome is Outcome.PASS for r in results), [(r.test_id, r.reason) for r in results]
    assert seed_calls == [True], "the world is sent once; the tests' own calls restore it"


async def test_a_database_check_first_also_sees_a_fresh_world(backend, idor_bundle):
    """A test that starts with a database check restores the world through the query."""
    zero_rows = HttpTest.model_validate(
        {
            "id": "no-hits",
            "kind": "regression",
            "db_checks": [{"sql": "SELECT COUNT(*) FROM hits", "expect": "equals", "rows": [[0]]}],
            "steps": [
                {"path": "/count", "expect": [{"type": "json_equals", "path": "n", "value": 0}]}
            ],
        }
    )
    tests = [_test("hit", "/hit", [{"type": "status_in", "statuses": [200]}]), zero_rows]
    results = await _suite(backend, idor_bundle.manifest, tests)
    assert [(r.test_id, r.outcome) for r in results] == [
        ("hit", Outcome.PASS),
        ("no-hits", Outcome.PASS),
    ], [r.reason for r in results]


async def test_a_reseed_needs_a_seed_of_this_workspace(backend):
    """Nothing seeded, or a seed from before the workspace was loaded: a clear refusal."""
    sandbox = await backend.acquire()
    try:
        await _load(sandbox)
        reseeding = protocol.ProxyRequest(path="/count", reseed=True)
        with pytest.raises(ControlError, match="nothing to reseed"):
            await sandbox.client.request(reseeding)
        assert await sandbox.client.seed(protocol.SeedRequest(tables={"hits": []}))
        assert (await sandbox.client.request(reseeding)).status == 200
        await _load(sandbox)
        with pytest.raises(ControlError, match="nothing to reseed"):
            await sandbox.client.query("SELECT 1", reseed=True)
    finally:
        await backend.release(sandbox)


async def test_tests_keep_their_order_and_results(backend, idor_bundle):
    tests = [
        _test("count", "/count", [{"type": "json_equals", "path": "n", "value": 0}]),
        _test("wrong", "/count", [{"type": "json_equals", "path": "n", "value": 5}]),
    ]
    results = await _suite(backend, idor_bundle.manifest, tests)
    assert [(r.test_id, r.outcome) for r in results] == [
        ("count", Outcome.PASS),
        ("wrong", Outcome.FAIL),
    ]
