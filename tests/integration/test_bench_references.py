"""The same-run references the benchmarks divide by (``bench/reference.py``, ``bench/floors.py``)
work: OpenEnv's reference server answers the OpenEnv client, and the fork floor serves the app
and costs less than starting it with plain uvicorn (else it would be no floor)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from openenv.core.generic_client import GenericEnvClient

from a01gym.gateway.server import free_port
from a01gym.scenario.bundle import Bundle

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import floors  # noqa: E402
import reference  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "idor_notes"


async def test_reference_server_speaks_openenv() -> None:
    async with reference.serve() as ref, GenericEnvClient(base_url=ref.url) as env:
        first = await env.reset(seed=7)
        assert first.observation["result"]["files"] == sorted(reference.FILES)
        read = await env.step({"tool": "read_file", "path": "app/db.py"})
        assert read.observation["result"]["content"] == reference.FILES["app/db.py"]
        wrong = await env.step({"tool": "submit"})
        assert wrong.observation["error"] == "unknown tool 'submit'"


async def test_fork_floor_serves_the_app_faster_than_a_fresh_uvicorn(tmp_path: Path) -> None:
    bundle = Bundle.load(FIXTURE)
    workspace = floors.write_workspace(bundle.workspace, tmp_path / "ws")
    entry = bundle.manifest.entrypoint
    async with floors.ForkFloor([]) as zygote:
        forks = [await zygote.serve(workspace, entry) for _ in range(3)]
    fresh = []
    for _ in range(3):
        async with floors.fresh_uvicorn(workspace, entry, free_port()) as app:
            fresh.append(app.first_answer_ms)
    assert statistics.median(forks) < statistics.median(fresh), (forks, fresh)
