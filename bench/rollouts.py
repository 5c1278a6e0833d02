"""Rollout benchmark: the training rollout path against the raw runtime, measured in one run.

Against one real ``a01gym serve`` process (local sandboxes, the test fixture):

* ``episodes_per_s``: the runtime benchmark's raw throughput (a scripted agent straight on the
  OpenEnv client, 16 sessions, playing :data:`SCRIPT`);
* ``rollout_episodes_per_s``: the same scripted episodes played through the training rollout
  path (:class:`a01gym.training.rollout.RolloutEngine`: chat rendering, tokenisation, tool-call
  parsing, env masks) in batches of 16, with environment steps gathered across the batch;
  ``rollout_to_runtime_ratio`` is their ratio;
* ``serial_rollout_episodes_per_s``: the same, with environment steps one rollout after another
  as TRL's ``environment_factory`` loop runs them (why ``a01gym train`` does not use that loop);
* ``trainer_overhead_pct`` / ``env_wait_pct`` / ``generation_pct``: shares of a GRPO step's wall
  time (tiny local model, LoRA, TRL ``GRPOTrainer`` with our ``rollout_func``) spent outside
  generation and the environment, waiting on the environment, and generating. A step runs from
  one optimizer step's end to the next (``steplog.StepLog``); the first (trainer start-up and
  first-call warm-up) is left out.

    python bench/rollouts.py --quick --json-out runs/bench/rollouts.json
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
import runtime
import serving

TARGETS = {
    "rollout_to_runtime_ratio": (">=", 0.8),
    "trainer_overhead_pct": ("<=", 15.0),
}
BATCH = 16
_TEXT = {".py", ".md", ".json"}
SCRIPT = [
    {"tool": "list_files"},
    {"tool": "read_file", "path": "app/routers/notes.py"},
    {"tool": "search", "pattern": "owner_id"},
    {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "alice"},
    {"tool": "http_request", "method": "GET", "path": "/notes", "actor": "bob"},
    {"tool": "read_file", "path": "app/auth.py"},
    {"tool": "submit"},
]
"""The scripted episode both paths play, on the fixture (``--cache``'s default)."""


class ScriptedPolicy:
    """Replies with :data:`SCRIPT`, one action per turn, as tool-call tokens."""

    def __init__(self, tokenizer: Any) -> None:
        from a01gym.training import session

        self.replies = []
        for action in SCRIPT:
            call = session.action_tool_call(action)["function"]
            text = f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
            self.replies.append(tokenizer(text, add_special_tokens=False)["input_ids"])

    def reply(self, active: list[Any], rooms: list[int]) -> list[list[int]]:
        return [self.replies[min(r.turns, len(self.replies) - 1)] for r in active]


def _rollout_throughput(url: str, tokenizer: Any, episodes: int, *, parallel: bool) -> float:
    from a01gym.training import rollout

    engine = rollout.RolloutEngine(tokenizer, url, max_turns=len(SCRIPT))
    policy = ScriptedPolicy(tokenizer)
    rewards = []
    started = time.perf_counter()
    try:
        for start in range(0, episodes, BATCH):
            rows = [{"seed": 1000 + i} for i in range(start, min(episodes, start + BATCH))]
            batch = engine.play(policy, rows, parallel=parallel)
            rewards += [r.session.reward for r in batch.rollouts]
            failures = [r.session.failure for r in batch.rollouts if r.session.failure]
            if failures:
                raise RuntimeError(f"rollouts failed: {failures[:3]}")
    finally:
        engine.close()
    return round(episodes / (time.perf_counter() - started), 3)


def _grpo_shares(url: str, model_dir: Path, out: Path, steps: int) -> dict[str, float]:
    from a01gym.training import config, grpo

    cfg = config.load_config(
        None,
        **{
            "output_dir": str(out),
            "gateway.url": url,
            "data.seeds": 8,
            "rollout.max_turns": 4,
            "rollout.max_new_tokens": 64,
            "rollout.max_completion_tokens": 1024,
            "grpo": {"max_steps": steps, "per_device_train_batch_size": 8, "num_generations": 4},
        },
    )
    grpo.train(cfg, model_path=str(model_dir), gateway_url=url)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][1:]
    step = sum(r["step_s"] for r in rows)
    generation = sum(r["generation_s"] for r in rows)
    env = sum(r["env_s"] for r in rows)
    return {
        "trainer_overhead_pct": round(100 * (step - generation - env) / step, 2),
        "env_wait_pct": round(100 * env / step, 2),
        "generation_pct": round(100 * generation / step, 2),
        "grpo_step_s_median": round(statistics.median(r["step_s"] for r in rows), 3),
        "grpo_trainer_s_median": round(
            statistics.median(r["step_s"] - r["generation_s"] - r["env_s"] for r in rows), 3
        ),
        "grpo_steps_measured": len(rows),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="a01gym-bench-rollouts-"))
    os.environ["TRACKIO_DIR"] = str(work / "trackio")  # before trl/trackio are imported
    from transformers import AutoTokenizer

    from a01gym.training import tiny

    # The tokenizer learns the app's own text, as a real model's vocabulary covers code: a
    # byte-level tokenizer trained on nothing would triple every prompt.
    # (workspace files only: nothing hidden feeds even a benchmark's tokenizer).
    files = sorted(args.cache.rglob("workspace/**/*"))
    corpus = [p.read_text() for p in files if p.suffix in _TEXT]
    model_dir = tiny.build_tiny(work / "tiny", corpus=corpus)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    result: dict[str, Any] = {}
    env = {"A01GYM_SANDBOX__POOL_SIZE": str(args.pool_size)}
    async with serving.gateway(args.cache, work / "runs", env=env) as served:
        url = served.url
        await asyncio.sleep(1.0)
        raw = await runtime._throughput(url, args.episodes, BATCH, script=lambda _: SCRIPT)
        result["episodes_per_s"] = raw["episodes_per_s"]
        # The rollout engine runs its clients on its own loop: off this one, in a thread.
        result["rollout_episodes_per_s"] = await asyncio.to_thread(
            _rollout_throughput, url, tokenizer, args.episodes, parallel=True
        )
        result["serial_rollout_episodes_per_s"] = await asyncio.to_thread(
            _rollout_throughput, url, tokenizer, BATCH, parallel=False
        )
        result["rollout_to_runtime_ratio"] = round(
            result["rollout_episodes_per_s"] / result["episodes_per_s"], 3
        )
        result["parallel_to_serial_ratio"] = round(
            result["rollout_episodes_per_s"] / result["serial_rollout_episodes_per_s"], 3
        )
        result.update(
            await asyncio.to_thread(_grpo_shares, url, model_dir, work / "grpo", args.grpo_steps)
        )
    return result


def cli() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer episodes and GRPO steps")
    parser.add_argument("--json-out", type=Path, help="also write the JSON result here")
    parser.add_argument("--cache", type=Path, default=runtime.FIXTURE, help="scenario source")
    parser.add_argument("--pool-size", type=int, default=8, help="warm sandboxes")
    args = parser.parse_args()
    args.episodes = 64 if args.quick else 256
    args.grpo_steps = 5 if args.quick else 10
    began = time.perf_counter()
    metrics = asyncio.run(main(args))
    report.emit("rollouts", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    cli()
