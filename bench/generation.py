"""Generation benchmark: multi-turn episodes with and without key/value cache reuse, same run.

A real pretrained model (packaged SmolLM2-135M-Instruct by default; ``--model`` takes a packaged
name, a GGUF file, a directory or a hub id) plays the same episodes greedily through the
training rollout path (:class:`a01gym.training.rollout.RolloutEngine` over an in-process gateway
on local sandboxes), twice:

* **without reuse**: every turn re-prefills each rollout's whole context, the rollouts of a
  batch left-padded into one ``generate`` (what the rollout path did before);
* **with reuse**: each rollout keeps its key/value cache across turns, so a turn prefills only
  the tool output and chat markup added since its last reply.

``kv_reuse_speedup`` is seconds per episode without ÷ with (target >= 3). Both modes play the
same rows (so the same scenarios and prompts) with greedy decoding; ``same_replies`` says whether
the two produced the same tokens (a float difference between cached and uncached attention can
flip a greedy choice, which would change later prompts), and the prefilled and generated token
counts of each mode are reported so the comparison can be checked. The order of the two modes
alternates between repeats, and the median of the repeats is reported.

    python bench/generation.py --quick --json-out runs/bench/generation.json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import realmodels
import report

TARGETS = {"kv_reuse_speedup": (">=", 3.0)}


def _play(engine: Any, policy: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    started = time.perf_counter()
    batch = engine.play(policy, rows)
    wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "generation_s": batch.generation_s,
        "prefilled": policy.prefilled_tokens,
        "generated": policy.generated_tokens,
        "turns": sum(r.turns for r in batch.rollouts),
        "replies": [r.completion_ids for r in batch.rollouts],
    }


def main(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from a01gym.cli.background import gateway_thread
    from a01gym.training import compare, policies, rollout

    torch.set_num_threads(args.threads)
    spec, sha = realmodels.model_source(args.model)
    tokenizer, model = compare.load_policy(spec)
    work = Path(tempfile.mkdtemp(prefix="a01gym-bench-generation-"))
    realmodels.family_cache(
        work / "cache", count=args.episodes, family="F01", domain="notes", seed=args.seed
    )
    rows = [{"seed": args.seed + i, "split": "train"} for i in range(args.episodes)]
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    with gateway_thread(work / "cache", work / "runs") as url:
        engine = rollout.RolloutEngine(
            tokenizer,
            url,
            max_turns=args.max_turns,
            max_completion_tokens=8192,
            max_output_chars=args.max_output_chars,
        )
        try:
            for repeat in range(args.repeats):
                for kv in (True, False) if repeat % 2 == 0 else (False, True):
                    policy = policies.ModelPolicy(
                        model,
                        tokenizer,
                        max_new_tokens=args.max_new_tokens,
                        temperature=0.0,
                        kv_cache=kv,
                    )
                    runs[kv].append(_play(engine, policy, rows))
        finally:
            engine.close()

    def per_episode(kv: bool, key: str) -> float:
        return statistics.median(run[key] for run in runs[kv]) / args.episodes

    with_s, without_s = per_episode(True, "wall_s"), per_episode(False, "wall_s")
    last = {kv: runs[kv][-1] for kv in runs}
    return {
        "model": args.model,
        "model_sha256": sha,
        "episodes": args.episodes,
        "repeats": args.repeats,
        "max_turns": args.max_turns,
        "max_new_tokens": args.max_new_tokens,
        "threads": args.threads,
        "seconds_per_episode_with_reuse": round(with_s, 2),
        "seconds_per_episode_without_reuse": round(without_s, 2),
        "kv_reuse_speedup": round(without_s / with_s, 2),
        "prefilled_tokens_per_episode": {
            "with_reuse": last[True]["prefilled"] // args.episodes,
            "without_reuse": last[False]["prefilled"] // args.episodes,
        },
        "generated_tokens_per_episode": {
            "with_reuse": last[True]["generated"] // args.episodes,
            "without_reuse": last[False]["generated"] // args.episodes,
        },
        "turns_per_episode": last[True]["turns"] / args.episodes,
        "tokens_per_s": {
            "with_reuse": round(last[True]["generated"] / last[True]["generation_s"], 2),
            "without_reuse": round(last[False]["generated"] / last[False]["generation_s"], 2),
        },
        "same_replies": last[True]["replies"] == last[False]["replies"],
    }


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="2 episodes, 1 repeat")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--model", default="smollm2-135m", help="packaged name or model spec")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--max-output-chars", type=int, default=600)
    args = parser.parse_args()
    args.episodes = 2 if args.quick else 4
    args.repeats = 1 if args.quick else 3
    began = time.perf_counter()
    metrics = main(args)
    report.emit(
        "generation", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out
    )


if __name__ == "__main__":
    cli()
