"""Zero-shot baselines: real pretrained models play the eval split as they come, no training.

Each model (packaged names by default: Qwen2.5-Coder-0.5B-Instruct and SmolLM2-135M-Instruct,
read from PyPI-packaged GGUF files; ``--model`` takes any packaged name, GGUF file, directory or
hub id) plays the same eval-split episodes through the training rollout path
(:class:`a01gym.training.rollout.RolloutEngine`, key/value cache reuse on), once greedily and once
at the training temperature (1.0), on a freshly built cache served by an in-process gateway on
local sandboxes. The no-op, deny-all and reference agents play the same seeds in the same run,
as the floor, the trap and the ceiling of the scale.

Per model and decoding: ``episodes``, ``resolved_rate``, ``security_rate``, ``regression_rate``,
``invalid_action_rate`` (invalid actions ÷ actions), ``mean_reward`` with ``mean_reward_ci``
(bootstrap 95%), ``tokens_per_s`` (generated tokens ÷ generation seconds) and
``seconds_per_episode`` (wall). There are no targets: these are the environment's first real-model
figures, the starting point learning has to beat.

    python bench/zeroshot.py --quick --json-out runs/bench/zeroshot.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import realmodels
import report

DEFAULT_MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b")


def _model_rows(
    url: str, spec: str, rows: list[dict[str, Any]], temperature: float, args: Any
) -> dict[str, Any]:
    from a01gym.training import compare, policies, rollout

    tokenizer, model = compare.load_policy(spec)
    engine = rollout.RolloutEngine(
        tokenizer,
        url,
        max_turns=args.max_turns,
        max_completion_tokens=8192,
        max_output_chars=args.max_output_chars,
    )
    policy = policies.ModelPolicy(
        model, tokenizer, max_new_tokens=args.max_new_tokens, temperature=temperature
    )
    started = time.perf_counter()
    generation_s = 0.0
    records = []
    try:
        for start in range(0, len(rows), args.batch):
            batch = engine.play(policy, rows[start : start + args.batch])
            generation_s += batch.generation_s
            records += [r.record() | {"error": r.session.failure} for r in batch.rollouts]
    finally:
        engine.close()
    wall = time.perf_counter() - started
    summary = compare.summarise_records(records)["overall"]
    return {
        **{k: summary[k] for k in summary if k != "episodes"},
        "episodes": len(records),
        "errors": sum(1 for r in records if r["error"]),
        "tokens_per_s": round(policy.generated_tokens / max(generation_s, 1e-9), 2),
        "seconds_per_episode": round(wall / max(1, len(records)), 1),
        "turns_per_episode": round(statistics.fmean(r["turns"] for r in records), 2),
        "unparsable_per_episode": round(statistics.fmean(r["unparsable"] for r in records), 2),
        "tools_called": sorted(
            {
                call["function"]["name"]
                for r in records
                for m in r["messages"]
                for call in m.get("tool_calls") or []
            }
        ),
        "example": records[0]["messages"][2:8] if records else [],
    }


def _baseline(url: str, cache: Path, entries: list[Any], name: str) -> float:
    """Mean reward of a scripted agent (noop, deny-all or reference) on the same scenarios,
    played by the project's own eval runner."""
    from a01gym.env.sampler import open_source
    from a01gym.training import agents
    from a01gym.training import eval as evaluation

    source = open_source(cache)
    make = {
        "noop": agents.NoopAgent,
        "deny-all": agents.DenyAllAgent,
        "reference": lambda: agents.ReferenceAgent(source),
    }[name]
    jobs = evaluation.jobs_for(
        len(entries), seed=0, scenarios=[(e.hash, e.family) for e in entries]
    )
    records = asyncio.run(evaluation.run_eval(url, make, jobs, agent_name=name, split="eval"))
    return round(statistics.fmean(float(r.reward or 0.0) for r in records), 4)


def main(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from a01gym.cli.background import gateway_thread
    from a01gym.factory import pipeline
    from a01gym.scenario.cache import ScenarioCache

    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="a01gym-bench-zeroshot-"))
    cache = work / "cache"
    pipeline.build_demo(cache, count=args.scenarios, seed=args.seed)
    entries = list(ScenarioCache(cache).entries(split="eval"))[: args.episodes]
    if len(entries) < args.episodes:
        raise SystemExit(
            f"the build admitted {len(entries)} eval-split scenarios, fewer than --episodes "
            f"{args.episodes}; raise --scenarios"
        )
    rows = [{"scenario": e.hash, "split": "eval", "agent": "zeroshot"} for e in entries]
    result: dict[str, Any] = {"eval_scenarios": len(rows), "models": []}
    with gateway_thread(cache, work / "runs") as url:
        for name in ("noop", "deny-all", "reference"):
            result[f"{name}_mean_reward"] = _baseline(url, cache, entries, name)
        for name in args.model or DEFAULT_MODELS:
            spec, sha = realmodels.model_source(name)
            for decoding, temperature in (("greedy", 0.0), ("sampled", 1.0)):
                figures = _model_rows(url, spec, rows, temperature, args)
                result["models"].append(
                    {"model": name, "model_sha256": sha, "decoding": decoding, **figures}
                )
                if args.json_out:  # a long run cut short still leaves what it measured
                    args.json_out.parent.mkdir(parents=True, exist_ok=True)
                    args.json_out.with_suffix(".partial.json").write_text(
                        json.dumps(result, indent=2)
                    )
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="6 episodes per model and decoding")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--model", action="append", help="packaged name or model spec (repeat)")
    parser.add_argument("--episodes", type=int, help="eval episodes per model and decoding")
    parser.add_argument("--scenarios", type=int, help="candidates to build (default 6 an episode)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--batch", type=int, default=4, help="episodes played together")
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-output-chars", type=int, default=600)
    args = parser.parse_args()
    args.episodes = args.episodes or (6 if args.quick else 20)
    # about a fifth of a default build is held out (eval domains and families): 6 candidates
    # an episode leave room for the gates' rejections
    args.scenarios = args.scenarios or max(60, args.episodes * 6)
    began = time.perf_counter()
    metrics = main(args)
    report.emit("zeroshot", metrics, {}, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
