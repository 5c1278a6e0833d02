"""The hidden-test runner's concurrent batch of read-only tests, in a real sandbox.

A batch of safe-method tests counts only if nothing wrote the database meanwhile; a GET that
writes (here ``/hit``) sends the batch back to one test at a time, so every test still sees
the freshly seeded world.
"""

from __future__ import annotations

import pytest

from a01gym.sandbox import protocol, runner
from a01gym.scenario.httptest import HttpTest, Outcome
from a01gym.scenario.manifest import Fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

COUNTER_APP = b"""
import os, sqlite3, time
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


@app.get("/slow-count")
def slow_count() -> dict:
    time.sleep(0.2)  # long after any /hit sent alongside has committed
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


async def _suite(backend, manifest, tests):
    sandbox = await backend.acquire()
    try:
        status = await sandbox.client.load_workspace(
            {"main.py": COUNTER_APP}, entrypoint="main:app", start=True
        )
        assert status.state is protocol.AppState.RUNNING, status.error
        fixture = Fixture(tables={"hits": []})
        return await runner.run_suite(sandbox.client, manifest, fixture, tests, seed=3)
    finally:
        await backend.release(sandbox)


async def test_a_writing_get_sends_the_batch_back_to_sequential(backend, idor_bundle):
    zero = [{"type": "json_equals", "path": "n", "value": 0}]
    tests = [
        _test("count-1", "/slow-count", zero),
        _test("hit", "/hit", [{"type": "status_in", "statuses": [200]}]),
        _test("count-2", "/slow-count", zero),
    ]
    results = await _suite(backend, idor_bundle.manifest, tests)
    assert [r.test_id for r in results] == ["count-1", "hit", "count-2"]
    assert all(r.outcome is Outcome.PASS for r in results), [(r.test_id, r.reason) for r in results]


async def test_read_only_tests_keep_their_order_and_results(backend, idor_bundle):
    tests = [
        _test("count", "/slow-count", [{"type": "json_equals", "path": "n", "value": 0}]),
        _test("wrong", "/slow-count", [{"type": "json_equals", "path": "n", "value": 5}]),
    ]
    results = await _suite(backend, idor_bundle.manifest, tests)
    assert [(r.test_id, r.outcome) for r in results] == [
        ("count", Outcome.PASS),
        ("wrong", Outcome.FAIL),
    ]
