"""Benchmark the scenario factory: template author → compiler → gold gates in real sandboxes.

Measures, on one build into a fresh temporary cache:

* ``validated_per_min``: candidates taken through every gold gate per minute of build time
  (authoring, compiling, sandbox verification of vulnerable, reference and every trap);
* ``yield``: admitted / candidates;
* ``families`` / ``domains`` / ``styles``: distinct families, domains and data-access styles
  (label ``data_access``, ``sqlite3`` when absent) among admitted scenarios;
* ``hack_probe_passed``: admitted scenarios whose cache entry records every G5 hack, each run
  and paid nothing (it must equal ``admitted``);
* ``runs_per_candidate`` (G1–G3 runs), ``worlds_per_run`` (G4), ``probes_per_candidate`` (G5)
  and ``compile_ms_mean`` for context.

Targets (issues 3, 13, 29): ``cpu_units_per_candidate`` ≤ 192, the CPU seconds a candidate
costs (this process plus every sandbox, all reaped by the end) in units of the calibration
workload timed all through the build (``calibration.Sampler``, the median of a sample every
2 s; ``calibration_idle_ms``, timed before and after the build as this bench did until
2026-12-07, stays in the JSON); ``yield`` ≥ 0.9,
``families`` the whole catalog, ``domains`` ≥ 16, ``styles`` ≥ 2, ``hack_probe_passed`` ==
``admitted``. The 192 is the former absolute bar, 60 candidates a minute on 2 cores (2 CPU-s a
candidate), translated as ``bench/scale.py`` translates its own: on a machine ~2.5× faster than
one where the calibration reads ~26 ms. ``validated_per_min`` stays in the JSON without a
target, since the load and the machine's speed move it with no code change; beside it, the
load average, ``cpu_s_per_candidate``, ``cpu_bound_per_min_2_cores`` (the rate two otherwise
idle cores would sustain at that CPU cost) and ``cores_busy`` (the share of the machine's cores
the build kept busy; other users' load lowers it too).

Two runs of this tree back to back (2026-12-07, this 2-core VM): the sampled unit read 22.76
and 23.79 ms (81 and 88 samples) while the idle one read 25.87 and 34.08, so the target figure
read 289.5 and 300.9 for 6.59 and 7.16 CPU-s a candidate (at 129cdd6). Both MISS the 192:
since every stated clause of the policy has its legitimate use in every suite (~30
regressions a suite at 129cdd6, 18.4 before; ~32 since administrators' record writes joined)
a candidate costs ~11% more CPU (``tools/bench_ab.py`` against a7ae932: 8.05
against 8.94 CPU-s, two rounds each), and on this day's machine the build's CPU rose more
than the pure-Python unit did (a candidate of a7ae932 cost 4.98 CPU-s earlier that day and
7.5-8.6 at 18:50): sandbox starts and requests are system calls and process
switches, which the unit does not time.

``--workers`` (concurrent sandbox runs) defaults to one more than the cores: a run hands every
request from the verifier to the sandbox's supervisor to the app and back, so one run keeps a
core only partly busy, and with as many runs as cores a fifth of the machine idled.

Prints the JSON result and one summary line; ``--json-out FILE`` also writes the JSON.

    python bench/factory.py --quick --json-out bench/results/factory.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import calibration
import report
from a01gym.factory import author, compiler, config, families, hacks, pipeline
from a01gym.factory.cache import CacheEntry, ScenarioCache

TARGETS = {
    "cpu_units_per_candidate": ("<=", 192.0),
    "yield": (">=", 0.9),
    "families": (">=", len(families.FAMILIES)),
    "domains": (">=", 16),
    "styles": (">=", 2),
}


def _survived_every_hack(entry: CacheEntry) -> bool:
    """The entry's recorded G5 results name every registered hack, each unpaid (run, or
    recorded as not applicable to this scenario)."""
    probes = {p["hack"]: p for p in entry.validation.get("probes", [])}
    return set(probes) == set(hacks.HACKS) and all(
        (p["ran"] and p["graded"] and not p["resolved"] and p["score"] == 0.0)
        or p["note"].startswith("not applicable")
        for p in probes.values()
    )


def _cpu_seconds() -> float:
    """User + system CPU of this process and every reaped descendant (sandboxes included)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


async def run(quick: bool, workers: int, count: int | None) -> dict[str, Any]:
    """One build; returns the metrics."""
    cfg = config.FactoryConfig(
        count=count or (48 if quick else 144),
        seed=2024,
        gates=config.GateConfig(workers=workers),
    )
    started = time.perf_counter()
    specs = [author.TemplateAuthor().draft(r) for r in author.plan(cfg)]
    compile_started = time.perf_counter()
    bundles = [compiler.compile_bundle(spec) for spec in specs]
    compile_ms = (time.perf_counter() - compile_started) * 1000 / len(bundles)
    del started
    idle_before = calibration.measure()
    with tempfile.TemporaryDirectory(prefix="a01gym-bench-factory-") as tmp:
        load_before = os.getloadavg()[0]
        # the unit drifts on a shared VM within minutes (23-36 ms in 15 minutes here): time it
        # all through the build, under the build's own load
        sampler = calibration.Sampler()
        cpu_before = _cpu_seconds()
        summary = await pipeline.build(cfg, Path(tmp) / "cache")
        cpu = _cpu_seconds() - cpu_before  # the backend has closed: sandboxes are reaped
        calibration_ms, samples = sampler.stop()
        load_after = os.getloadavg()[0]
        entries = ScenarioCache(Path(tmp) / "cache").entries()
    calibration_idle_ms = round((idle_before + calibration.measure()) / 2, 2)
    runs = sum(2 + len(b.hidden.traps) for b in bundles)
    worlds = [len(r["world_verdicts"]) for e in entries for r in e.validation["runs"]]
    probes = sum(p["ran"] for e in entries for p in e.validation.get("probes", []))
    return {
        "validated_per_min": round(summary.candidates / summary.duration_s * 60, 1),
        "yield": round(summary.yield_, 3),
        "families": len({e.family for e in entries}),
        "domains": len({e.domain for e in entries}),
        "styles": len({_style(bundle) for bundle in bundles}),
        "hack_probe_passed": sum(_survived_every_hack(e) for e in entries),
        "candidates": summary.candidates,
        "admitted": summary.admitted,
        "build_seconds": round(summary.duration_s, 1),
        "gate_seconds": round(summary.gate_duration_s, 1),
        "runs_per_candidate": round(runs / len(bundles), 2),
        "worlds_per_run": round(sum(worlds) / max(len(worlds), 1), 2),
        "probes_per_candidate": round(probes / max(len(entries), 1), 2),
        "cpu_s_per_candidate": round(cpu / summary.candidates, 3),
        "calibration_ms": calibration_ms,
        "calibration_samples": samples,
        "calibration_idle_ms": calibration_idle_ms,
        "cpu_units_per_candidate": calibration.units(
            cpu * 1000 / summary.candidates, calibration_ms
        ),
        "cpu_bound_per_min_2_cores": round(2 * 60 * summary.candidates / cpu, 1),
        "cores_busy": round(cpu / (summary.duration_s * (os.cpu_count() or 1)), 3),
        "compile_ms_mean": round(compile_ms, 1),
        "workers": workers,
        "cpus": os.cpu_count(),
        "load_avg_1m": [round(load_before, 2), round(load_after, 2)],
        "rejections": {
            family: stats.reasons for family, stats in summary.per_family.items() if stats.rejected
        },
    }


def _style(bundle: Any) -> str:
    return str(bundle.hidden.labels.get("data_access", "sqlite3"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="48 candidates instead of 144")
    parser.add_argument("--count", type=int, help="override the candidate count")
    parser.add_argument(
        "--workers",
        type=int,
        default=(os.cpu_count() or 1) + 1,
        help="concurrent sandbox runs (default: one more than the cores)",
    )
    parser.add_argument("--json-out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    began = time.perf_counter()
    metrics = asyncio.run(run(args.quick, args.workers, args.count))
    targets = {**TARGETS, "hack_probe_passed": ("==", metrics["admitted"])}
    report.emit(
        "factory",
        metrics,
        targets,
        quick=args.quick,
        began=began,
        json_out=args.json_out,
        calibration_ms=metrics["calibration_ms"],
    )


if __name__ == "__main__":
    main()
