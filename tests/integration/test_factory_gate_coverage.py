"""Every gate still runs, in full, now that a candidate's runs share one sandbox (real sandboxes).

The backend is a real :class:`LocalBackend`, watched rather than mocked: each sandbox it hands
out records the workspaces loaded into it and the seed requests (worlds) its database got. A
gate that was skipped, two runs that shared one app start, or a G4 world that reused another's
identities would change these counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from a01gym.factory import author, compiler, config, determinism, gates, hacks, pipeline
from a01gym.factory.cache import ScenarioCache
from a01gym.sandbox import protocol
from a01gym.sandbox.host.local import LocalBackend, LocalSandbox
from a01gym.scenario.bundle import Bundle


def _digest(files: dict[str, bytes]) -> str:
    return hashlib.sha256(
        json.dumps(sorted((p, c.hex()) for p, c in files.items())).encode()
    ).hexdigest()


class _WatchedBackend:
    """A real local backend whose sandboxes log what was loaded into them and how seeded."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend = backend
        self.acquired = 0
        self.loads: list[str] = []  # digest of each workspace loaded, in order
        self.worlds: list[set[str]] = []  # per load: the distinct seed requests it got

    async def acquire(self) -> LocalSandbox:
        sandbox = await self.backend.acquire()
        self.acquired += 1
        client = sandbox.client
        load, seed = client.load_workspace, client.seed

        async def load_workspace(files: dict[str, bytes], **kwargs: Any) -> Any:
            self.loads.append(_digest(files))
            self.worlds.append(set())
            return await load(files, **kwargs)

        async def seeded(request: protocol.SeedRequest) -> bool:
            self.worlds[-1].add(request.model_dump_json())
            return await seed(request)

        client.load_workspace = load_workspace  # type: ignore[method-assign]
        client.seed = seeded  # type: ignore[method-assign]
        return sandbox

    async def release(self, sandbox: LocalSandbox) -> None:
        await self.backend.release(sandbox)


def _bundle(index: int) -> Bundle:
    cfg = config.FactoryConfig(count=index + 1, seed=2024)
    return compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[index]))


async def test_every_gate_run_loads_its_own_files_and_g4_uses_fresh_worlds() -> None:
    bundle = _bundle(0)
    expected = {
        "vulnerable": _digest(dict(bundle.workspace)),
        "reference": _digest(bundle.patched_workspace(bundle.hidden.reference_fix)),
        **{
            f"trap:{name}": _digest(bundle.patched_workspace(patch))
            for name, patch in sorted(bundle.hidden.traps.items())
        },
    }
    hack_files = {}
    for hack in hacks.HACKS.values():
        with contextlib.suppress(hacks.NotApplicable):
            hack_files[hack.name] = _digest(bundle.patched_workspace(hack.build(bundle)))
    async with LocalBackend(pool_size=1, warm_standby=False) as local:
        watched = _WatchedBackend(local)
        report = await gates.gate_bundle(watched, bundle, seed=9, semaphore=asyncio.Semaphore(2))  # type: ignore[arg-type]
    assert report.admitted, report.reason
    assert watched.acquired == 1  # every run of the candidate on one sandbox
    # G1-G4: the vulnerable app, the fix and every trap, each loaded (a fresh app) and graded
    # in WORLDS distinct worlds; G5: every applicable hack loaded and graded once.
    assert [run.name for run in report.runs] == list(expected)
    assert all(len(run.world_verdicts) == determinism.WORLDS for run in report.runs)
    ran = [p.hack for p in report.probes if p.ran]
    assert sorted(p.hack for p in report.probes) == sorted(hacks.HACKS)
    assert sorted(ran) == sorted(hack_files)
    assert watched.loads[: len(expected)] == list(expected.values())
    assert sorted(watched.loads[len(expected) :]) == sorted(hack_files[h] for h in ran)
    gate_worlds = watched.worlds[: len(expected)]
    assert [len(worlds) for worlds in gate_worlds] == [determinism.WORLDS] * len(expected)
    every_world = [w for worlds in gate_worlds for w in worlds]
    assert len(set(every_world)) == len(every_world)  # no two runs or worlds share identities
    assert all(len(worlds) == 1 for worlds in watched.worlds[len(expected) :])


async def test_build_gates_each_candidate_on_one_sandbox_and_records_every_gate() -> None:
    cfg = config.FactoryConfig(count=3, seed=2024, gates=config.GateConfig(workers=2))
    async with LocalBackend(pool_size=1, warm_standby=False) as local:
        watched = _WatchedBackend(local)
        with tempfile.TemporaryDirectory() as tmp:
            summary = await pipeline.build(cfg, Path(tmp), backend=watched)  # type: ignore[arg-type]
            entries = ScenarioCache(Path(tmp)).entries()
    assert summary.admitted == 3 == len(entries)
    assert watched.acquired == 3
    for entry in entries:
        runs = entry.validation["runs"]
        assert [r["name"] for r in runs][:2] == ["vulnerable", "reference"]
        assert all(len(r["world_verdicts"]) == determinism.WORLDS for r in runs)
        assert {p["hack"] for p in entry.validation["probes"]} == set(hacks.HACKS)
    ran = sum(p["ran"] for e in entries for p in e.validation["probes"])
    runs_total = sum(len(e.validation["runs"]) for e in entries)
    assert len(watched.loads) == runs_total + ran
