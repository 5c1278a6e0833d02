"""What the feedback loop's hot-reloaded weights cost a reset.

A gateway started with ``--weights FILE`` checks the file at every reset (one ``stat``) and
re-reads it only when it changed, so the feedback loop can rewrite it under a running server.
Over a real factory cache (its SQLite index, as the runtime reads it) this times:

* ``weights_check_us_p50``: :meth:`CurriculumSampler.weights` when the file did not change
  (the steady state: what every reset pays), against ``stat_us_p50``, a bare ``os.stat`` of
  the same file timed the same way in the same run (the machine's floor for the same work):
  ``weights_check_ratio_p50``;
* ``weights_reload_us_p50``: the same call right after ``write_weights`` replaced the file
  (paid once per rewrite);
* ``pick_ms_p50_unweighted`` / ``pick_ms_p50_weighted``: a whole :meth:`pick` without and with
  a weights file, for scale (it lists the train slice from the index at every reset).

Target (issue 29: a ratio to a same-run reference): the steady-state check costs at most 3×
the bare ``stat`` it is built on (it was 50 µs in absolute terms, which a slower machine misses
with no code change). Needs no sandbox: the cache is authored and compiled, not gated.

    python bench/curriculum.py --quick
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import report
from a01gym.env import sampler
from a01gym.factory import author, compiler, config
from a01gym.factory.cache import Provenance, ScenarioCache
from a01gym.feedback import weights

TARGETS = {"weights_check_ratio_p50": ("<=", 3.0)}


def _cache(root: Path, count: int) -> ScenarioCache:
    cache = ScenarioCache(root)
    with cache.writer():
        for request in author.plan(config.FactoryConfig(count=count, seed=5)):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            cache.add(
                bundle,
                split="train",
                validation={},
                provenance=Provenance(author="template", config_hash="bench"),
            )
    return cache


def _p50_us(runs: int, call: Callable[[int], object], before: Callable[[int], None]) -> float:
    times = []
    for seed in range(runs):
        before(seed)
        started = time.perf_counter()
        call(seed)
        times.append((time.perf_counter() - started) * 1e6)
    return round(statistics.median(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer scenarios and picks")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    scenarios, picks = (40, 300) if args.quick else (200, 2000)
    with tempfile.TemporaryDirectory(prefix="a01gym-bench-curriculum-") as tmp:
        work = Path(tmp)
        cache = _cache(work / "cache", scenarios)
        path = work / "weights.json"
        cells = {f"{e.family}/{e.difficulty}" for e in cache.entries()}
        table = {"*": 1.0} | {key: float(i % 5) for i, key in enumerate(sorted(cells))}
        plain = sampler.CurriculumSampler(cache)
        weighted = sampler.CurriculumSampler(cache, weights_path=path)
        weights.write_weights(path, table)

        def nothing(seed: int) -> None:
            pass

        def rewrite(seed: int) -> None:
            weights.write_weights(path, table | {"*": 1.0 + seed % 3})

        check = _p50_us(picks, lambda _: weighted.weights(), nothing)
        floor = _p50_us(picks, lambda _: os.stat(path), nothing)
        reload = _p50_us(picks, lambda _: weighted.weights(), rewrite)
        unweighted = _p50_us(picks, plain.pick, nothing) / 1000
        steady = _p50_us(picks, weighted.pick, nothing) / 1000
    metrics = {
        "scenarios": scenarios,
        "calls": picks,
        "weights_check_us_p50": check,
        "stat_us_p50": floor,
        "weights_check_ratio_p50": round(check / floor, 2),
        "weights_reload_us_p50": reload,
        "pick_ms_p50_unweighted": round(unweighted, 3),
        "pick_ms_p50_weighted": round(steady, 3),
    }
    report.emit(
        "curriculum", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out
    )


if __name__ == "__main__":
    main()
