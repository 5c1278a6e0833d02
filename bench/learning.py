"""Learning benchmark: does GRPO on this environment improve a (tiny) policy on unseen scenarios?

One family in one domain (``--family``, ``--domain``; the fix is small and similar across seeds),
built into a fresh cache with the offline factory and served by an in-process gateway on local
sandboxes. The scenarios are split three ways, by seed:

* **SFT**: the scripted solver plays them and its logs become the warm-start data; a tiny model
  built locally is fine-tuned on them (deliberately short, so the policy still has entropy);
* **GRPO**: unseen by SFT, so a group's rollouts succeed and fail on the same scenario (a
  scenario the warm start memorised gives every rollout reward 1 and no advantage);
* **held out**: played before GRPO (the SFT model) and after it (SFT + adapter),
  ``--eval-samples`` episodes each at the training temperature, because the policy GRPO
  optimises is the sampled one; the per-scenario means are paired.

Reports mean reward before and after, ``reward_gain_ci_low`` (the lower end of the paired 95%
bootstrap interval of the gain over held-out scenarios; target > 0),
``invalid_action_rate_ratio`` (after ÷ before; target <= 0.5), and where the gain came from:
``gain_from_fixes`` (episodes that became reward-1 fixes, net) against ``gain_from_penalties``
(reward change on episodes that were not fixed either way: fewer invalid actions, a broken app).

    python bench/learning.py --quick --json-out runs/bench/learning.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import report

TARGETS = {
    "reward_gain_ci_low": (">", 0.0),
    "invalid_action_rate_ratio": ("<=", 0.5),
}


async def _solve(url: str, cache: Path, hashes: list[str]) -> list[float]:
    """The scripted solver on each scenario (the gateway logs every episode)."""
    from a01gym.env.sampler import open_source
    from a01gym.training import session, solver

    source = open_source(cache)

    async def one(digest: str) -> float:
        episode = session.EpisodeSession(url)
        agent = solver.SolverAgent(source)
        try:
            await episode.reset(scenario=digest, split="train")
            await agent.start(episode.observation)
            while not episode.done:
                await episode.step(await agent.act(episode.observation))
            return float(episode.reward or 0.0)
        finally:
            await episode.close()

    return list(await asyncio.gather(*(one(h) for h in hashes)))


def _evaluate(
    url: str, model: str, adapter: Path | None, rows: list[dict], label: str, args: Any
) -> list:
    from a01gym.training import compare, rollout

    tokenizer, policy = compare.load_policy(model, adapter)
    engine = rollout.RolloutEngine(
        tokenizer,
        url,
        max_turns=args.max_turns,
        max_completion_tokens=4096,
        max_output_chars=400,
    )
    try:
        return compare.evaluate_model(
            engine,
            rollout.ModelPolicy(
                policy,
                tokenizer,
                max_new_tokens=args.max_new_tokens,
                temperature=args.eval_temperature,
            ),
            rows,
            label=label,
        )
    finally:
        engine.close()


def _scenario_means(records: list[dict], samples: int) -> list[float]:
    """Mean reward per held-out scenario (rows hold each scenario ``samples`` times in a row),
    the unit the paired bootstrap resamples."""
    rewards = [record["reward"] for record in records]
    return [statistics.fmean(rewards[i : i + samples]) for i in range(0, len(rewards), samples)]


def _sources_of_gain(before: list[dict], after: list[dict]) -> dict[str, float]:
    n = len(before)
    fixes = sum(
        (a["reward"] == 1.0) - (b["reward"] == 1.0) for b, a in zip(before, after, strict=True)
    )
    unfixed = [
        a["reward"] - b["reward"]
        for b, a in zip(before, after, strict=True)
        if a["reward"] < 1.0 and b["reward"] < 1.0
    ]
    return {
        "fixed_before": sum(b["reward"] == 1.0 for b in before),
        "fixed_after": sum(a["reward"] == 1.0 for a in after),
        "gain_from_fixes": round(
            sum(
                a["reward"] - b["reward"]
                for b, a in zip(before, after, strict=True)
                if (a["reward"] == 1.0) != (b["reward"] == 1.0)
            )
            / n,
            4,
        ),
        "gain_from_penalties": round(sum(unfixed) / n, 4),
        "net_new_fixes": fixes,
    }


def _warm_start(
    url: str, cache: Path, hashes: list[str], work: Path, cfg: Any, args: Any, result: dict
) -> str:
    """The scripted solver plays the SFT scenarios; the tiny model is built and fine-tuned on
    its episodes. Returns the warm-started model's directory."""
    from a01gym.training import sft, smoke, tiny, trajectories

    started = time.perf_counter()
    solved = asyncio.run(_solve(url, cache, hashes))
    result["solver_mean_reward"] = round(statistics.fmean(solved), 4)
    data = work / "sft-data"
    trajectories.export_trajectories(work / "episodes", data, min_reward=1.0, max_output_chars=400)
    base = tiny.build_tiny(
        work / "tiny",
        corpus=smoke.corpus(data),
        spec=tiny.TinySpec(hidden_size=128, intermediate_size=384, layers=4),
    )
    model = sft.warm_start(str(base), data, work / "sft-model", cfg.sft, seed=args.seed)
    result["sft_s"] = round(time.perf_counter() - started, 1)
    return str(model)


def main(args: argparse.Namespace) -> dict[str, Any]:
    work = args.work or Path(tempfile.mkdtemp(prefix="a01gym-bench-learning-"))
    work.mkdir(parents=True, exist_ok=True)
    warm = work / "sft-model"
    reuse = args.work is not None and (warm / "config.json").is_file()
    os.environ["TRACKIO_DIR"] = str(work / "trackio")  # before trl/trackio are imported
    from a01gym.cli.background import gateway_thread
    from a01gym.factory import pipeline
    from a01gym.factory.cache import ScenarioCache
    from a01gym.training import compare, config, grpo, stats

    cache = work / "cache"
    if not reuse:
        pipeline.build_demo(
            cache,
            count=args.scenarios,
            seed=args.seed,
            families=[args.family],
            domains=[args.domain],
            difficulty={"easy": 1.0},
            split={"eval_domains": [], "eval_families": []},
        )
    hashes = [e.hash for e in ScenarioCache(cache).entries(split="train")]
    held_out = hashes[: args.held_out]
    sft_set = hashes[args.held_out : args.held_out + args.sft_scenarios]
    grpo_set = hashes[args.held_out + args.sft_scenarios :]
    result: dict[str, Any] = {
        "family": args.family,
        "domain": args.domain,
        "sft_scenarios": len(sft_set),
        "grpo_scenarios": len(grpo_set),
        "held_out_scenarios": len(held_out),
        "eval_samples": args.eval_samples,
        "eval_temperature": args.eval_temperature,
    }
    cfg = config.load_config(
        None,
        **{
            "output_dir": str(work / time.strftime("run-%Y%m%d-%H%M%S")),
            "gateway.url": "http://unused",
            "data.seeds": len(grpo_set),
            "data.scenarios": grpo_set,
            "rollout.max_turns": args.max_turns,
            "rollout.max_new_tokens": args.max_new_tokens,
            "rollout.max_completion_tokens": 4096,
            "rollout.max_output_chars": 400,
            "rollout.temperature": 1.0,
            "lora.r": 16,
            "lora.alpha": 32,
            "sft.full": True,
            "sft.epochs": args.sft_epochs,
            "sft.learning_rate": 3e-3,
            "grpo": {
                "max_steps": args.grpo_steps,
                "per_device_train_batch_size": 8,
                "num_generations": 8,
                "learning_rate": args.grpo_lr,
            },
        },
    )
    with gateway_thread(cache, work / "episodes") as url:
        if reuse:
            model = str(warm)
            result["warm_start_reused"] = str(work)
        else:
            model = _warm_start(url, cache, sft_set, work, cfg, args, result)
        rows = [
            {"scenario": h, "split": "train", "agent": "eval"}
            for h in held_out
            for _ in range(args.eval_samples)
        ]
        # The before-eval is reused only if it was played exactly as the after-eval will be.
        played = {
            "rows": rows,
            "max_turns": args.max_turns,
            "max_new_tokens": args.max_new_tokens,
            "temperature": args.eval_temperature,
        }
        stored = work / "before.json"
        saved = json.loads(stored.read_text()) if reuse and stored.is_file() else {}
        if saved.get("played") == played:
            before = saved["records"]
        else:
            started = time.perf_counter()
            before = _evaluate(url, model, None, rows, "before", args)
            result["eval_s"] = round(time.perf_counter() - started, 1)
            stored.write_text(json.dumps({"played": played, "records": before}))
        started = time.perf_counter()
        grpo.train(cfg, model_path=model, gateway_url=url)
        result["grpo_s"] = round(time.perf_counter() - started, 1)
        after = _evaluate(url, model, cfg.output_dir / "adapter", rows, "after", args)
    for label, records in (("before", before), ("after", after)):
        compare.write_eval(cfg.output_dir, label, records)
        summary = compare.summarise_records(records)["overall"]
        result[f"{label}_mean_reward"] = summary["mean_reward"]
        result[f"{label}_invalid_action_rate"] = summary["invalid_action_rate"]
        result[f"{label}_resolved_rate"] = summary["resolved_rate"]
    diff = stats.paired_bootstrap_difference(
        _scenario_means(after, args.eval_samples), _scenario_means(before, args.eval_samples)
    )
    result["reward_gain"] = round(diff.mean_difference, 4)
    result["reward_gain_ci_low"] = round(diff.low, 4)
    result["reward_gain_ci_high"] = round(diff.high, 4)
    result["reward_gain_p_value"] = round(diff.p_value, 4)
    result["invalid_action_rate_ratio"] = round(
        result["after_invalid_action_rate"] / max(result["before_invalid_action_rate"], 1e-9), 3
    )
    result.update(_sources_of_gain(before, after))
    result["run_dir"] = str(cfg.output_dir)
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer scenarios and steps")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--family", default="F01", help="the one bug family")
    parser.add_argument("--domain", default="notes", help="the one domain")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--work",
        type=Path,
        help="work directory; a previous run's cache, warm start and before-eval are reused",
    )
    parser.add_argument("--sft-epochs", type=float, help="warm-start epochs (default by size)")
    parser.add_argument("--grpo-steps", type=int, help="GRPO steps (default by size)")
    parser.add_argument("--grpo-lr", type=float, default=5e-4, help="GRPO LoRA learning rate")
    parser.add_argument("--eval-samples", type=int, default=4, help="episodes per scenario")
    parser.add_argument("--eval-temperature", type=float, default=1.0)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=80)
    args = parser.parse_args()
    args.held_out = 12 if args.quick else 24
    args.sft_scenarios = 28 if args.quick else 40
    args.scenarios = args.held_out + args.sft_scenarios + (12 if args.quick else 32)
    args.sft_epochs = args.sft_epochs or 12
    args.grpo_steps = args.grpo_steps or (12 if args.quick else 40)
    began = time.perf_counter()
    metrics = main(args)
    report.emit("learning", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
