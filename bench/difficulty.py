"""Difficulty against success: does a scenario's difficulty score predict how often a real,
fine-tuned model fixes it? (issue 28, item 5)

The score (:mod:`a01gym.factory.difficulty`) is a hand-weighted sum of features measured on
the compiled scenario: sites, the fix's files, where it lands, whether the admin-guard style
moves it, decoys, hint level. Calibrating it needs an agent that
sometimes succeeds and sometimes fails; zero-shot, no model runnable here fixes anything
(README, real models), and SmolLM2-135M fine-tuned on the scripted solver's episodes of one
family fixed 4 of 12 on 2026-11-29 (``bench/learning.py``; 0 of 12 on the apps of 2026-11-30).
So this bench, for a model that can:

1. builds one family in one domain (``--family``, ``--domain``) across all three bands;
2. plays the scripted solver on every scenario (its success, and its steps: the work the
   shortest plausible episode takes) and fine-tunes the model on the episodes of a
   band-balanced SFT set (``--sft-scenarios``);
3. plays the fine-tuned model on every other scenario (``--eval-samples`` each at
   ``--eval-temperature``) and sets each scenario's features (those of its difficulty score,
   :mod:`a01gym.factory.difficulty`; the fix's hunks and changed lines; the solver's steps) against
   the model's mean reward and resolved rate there.

Reported: per band, the scenarios, the solver's and the model's resolved rate (Wilson 95%
interval) and mean reward; Spearman's rank correlation of the score and of each feature with
the model's per-scenario reward (negative: harder is worse); ``easy_minus_hard_resolved``.
Targets: ``score_reward_spearman`` < 0 and ``easy_minus_hard_resolved`` > 0 (the label at
least orders success). One family and one small model: what it says about the weights holds
for what this model learned, no more; the table is the evidence a re-weighting would need.

Run on 2026-11-30 (SmolLM2-135M, F01, notes; 25.6 minutes): solver 60/60, the fine-tuned model
0/48 in every band, so no signal (docs/families.md, "Difficulty").

    python bench/difficulty.py --json-out runs/bench/difficulty.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import realmodels
import report
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.cache import ScenarioCache

TARGETS = {
    "score_reward_spearman": ("<", 0.0),
    "easy_minus_hard_resolved": (">", 0.0),
}

BANDS = ("easy", "medium", "hard")
FEATURES = (
    "score",
    "sites",
    "distance",
    "indirection",
    "decoys",
    "hint_level",
    "files",
    "hunks",
    "lines",
    "solver_steps",
)


def features(bundle: Bundle) -> dict[str, Any]:
    """The scenario's difficulty features (measured at compile time, in its labels) and its
    reference fix's size."""
    import difficulty_probe  # tools/, on the path once realmodels is imported

    labels = bundle.hidden.labels
    hunks, lines = difficulty_probe.fix_size(
        dict(bundle.workspace), dict(bundle.hidden.reference_fix.files)
    )
    return {
        "band": labels["difficulty"],
        "score": float(labels["difficulty_score"]),
        **json.loads(labels["difficulty_features"]),
        "hunks": hunks,
        "lines": lines,
    }


def _rate(values: list[bool]) -> dict[str, Any]:
    from a01gym.training import stats

    low, high = stats.wilson_interval(sum(values), len(values))
    return {"rate": round(sum(values) / len(values), 3), "ci": [round(low, 3), round(high, 3)]}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per band and per feature, from one row per evaluated scenario (its features, the
    solver's ``solver_reward`` and the model's ``rewards`` and ``resolved`` per episode)."""
    import difficulty_probe

    bands: dict[str, Any] = {}
    for band in BANDS:
        members = [r for r in rows if r["band"] == band]
        if not members:
            continue
        resolved = [x for r in members for x in r["resolved"]]
        bands[band] = {
            "scenarios": len(members),
            "solver_resolved": _rate([r["solver_reward"] == 1.0 for r in members]),
            "model_resolved": _rate(resolved),
            "model_mean_reward": round(
                statistics.fmean(x for r in members for x in r["rewards"]), 3
            ),
            "median_lines": statistics.median(r["lines"] for r in members),
        }
    means = [statistics.fmean(r["rewards"]) for r in rows]
    rho = {f: difficulty_probe.spearman([float(r[f]) for r in rows], means) for f in FEATURES}
    resolved = {b: v["model_resolved"]["rate"] for b, v in bands.items()}
    return {
        "bands": bands,
        "reward_spearman": rho,
        "score_reward_spearman": rho["score"],
        "easy_minus_hard_resolved": round(resolved.get("easy", 0.0) - resolved.get("hard", 0.0), 3),
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    work = realmodels.work_dir(args.work, "difficulty")
    import torch

    from a01gym.cli.background import gateway_thread
    from a01gym.training import compare, config, sft, trajectories

    torch.set_num_threads(args.threads)
    spec, sha = realmodels.model_source(args.model)
    cache = work / "cache"
    hashes = realmodels.family_cache(
        cache,
        count=args.count,
        family=args.family,
        domain=args.domain,
        seed=args.seed,
        difficulty={band: 1.0 for band in BANDS},
    )
    facts = {h: features(ScenarioCache(cache).load(h)) for h in hashes}
    # SFT on an equal share of each band (by hash order, which no feature decides)
    per_band = {b: [h for h in hashes if facts[h]["band"] == b] for b in BANDS}
    share = args.sft_scenarios // len(BANDS)
    sft_set = [h for b in BANDS for h in per_band[b][:share]]
    held_out = [h for h in hashes if h not in sft_set]
    cfg = config.load_config(
        None,
        **{
            "output_dir": str(work / time.strftime("run-%Y%m%d-%H%M%S")),
            "gateway.url": "http://unused",
            "sft.epochs": args.sft_epochs,
            "sft.full": True,
            "sft.learning_rate": args.sft_lr,
        },
    )
    timed = realmodels.Phases("difficulty")

    # the SFT data: the solver's episodes of the SFT set, logged by a gateway of their own
    logs = cfg.output_dir / "gateway-sft"
    with gateway_thread(cache, logs) as url:
        solved = timed("sft_solver", lambda: asyncio.run(realmodels.solve(url, cache, sft_set)))
    data = work / "sft-data"
    trajectories.export_trajectories(
        logs, data, min_reward=1.0, max_output_chars=args.max_output_chars
    )
    warm = timed(
        "sft", lambda: sft.warm_start(spec, data, work / "sft-model", cfg.sft, seed=args.seed)
    )
    rows = [{"scenario": h, "split": "train"} for h in held_out for _ in range(args.eval_samples)]
    with gateway_thread(cache, cfg.output_dir / "gateway") as url:
        solved += timed("solver", lambda: asyncio.run(realmodels.solve(url, cache, held_out)))
        records = timed("sft_eval", realmodels.evaluate, url, str(warm), None, rows, "sft", args)
    for digest, outcome in zip(sft_set + held_out, solved, strict=True):
        facts[digest].update(solver_reward=outcome["reward"], solver_steps=outcome["steps"])
    compare.write_eval(cfg.output_dir, "sft", records)
    scenarios = []
    for digest in held_out:
        mine = [r for r in records if r["scenario"] == digest]
        scenarios.append(
            {
                "scenario": digest,
                **facts[digest],
                "rewards": [r["reward"] for r in mine],
                "resolved": [bool(r["resolved"]) for r in mine],
            }
        )
    return {
        "model": args.model,
        "model_sha256": sha,
        "family": args.family,
        "domain": args.domain,
        "built": len(hashes),
        "sft_scenarios": len(sft_set),
        "held_out_scenarios": len(held_out),
        "eval_samples": args.eval_samples,
        "eval_temperature": args.eval_temperature,
        "solver_resolved_rate": round(
            sum(f["solver_reward"] == 1.0 for f in facts.values()) / len(facts), 3
        ),
        **summarise(scenarios),
        "scenarios": scenarios,
        "timings_s": timed.timings,
        "run_dir": str(cfg.output_dir),
    }


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--model", default="smollm2-135m", help="packaged name or model spec")
    parser.add_argument("--family", default="F01", help="the one bug family")
    parser.add_argument("--domain", default="notes", help="the one domain")
    parser.add_argument("--count", type=int, default=60, help="candidates to build")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, help="work directory (kept)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--sft-scenarios", type=int, default=12, help="split equally by band")
    parser.add_argument("--sft-epochs", type=float, default=1.5)
    parser.add_argument("--sft-lr", type=float, default=1e-4, help="SFT learning rate")
    parser.add_argument("--eval-samples", type=int, default=1, help="episodes per scenario")
    parser.add_argument("--eval-temperature", type=float, default=0.7)
    parser.add_argument("--batch", type=int, default=12, help="episodes generated together")
    parser.add_argument("--max-turns", type=int, default=10, help="multi-site fixes take more")
    parser.add_argument("--max-new-tokens", type=int, default=176)
    parser.add_argument("--max-completion-tokens", type=int, default=4096)
    parser.add_argument("--max-output-chars", type=int, default=600)
    args = parser.parse_args()
    began = time.perf_counter()
    metrics = main(args)
    metrics["minutes"] = round((time.perf_counter() - began) / 60, 1)
    report.emit("difficulty", metrics, TARGETS, quick=False, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
