"""Held-out evaluation of a local model, and base against trained on the same seeds.

A local causal LM (optionally with a LoRA adapter) plays episodes through the same
:class:`~a01gym.training.rollout.RolloutEngine` GRPO trains with, greedy by default, so eval
measures exactly the policy that was trained. Base and trained play the *same* seeds (hence
the same scenarios), so their rewards pair up: :func:`compare` reports per-family pass rates
with Wilson intervals, the mean reward with a bootstrap interval, and a paired bootstrap test
of the difference. An episode whose environment failed (not the model) is reported apart and
left out of the pairs, never counted as reward 0.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from a01gym.training import models, policies, prompting, stats
from a01gym.training import rollout as rollouts

__all__ = [
    "compare",
    "evaluate_model",
    "load_policy",
    "run_comparison",
    "summarise_records",
    "write_eval",
]


def load_policy(model: str, adapter: Path | None = None) -> tuple[Any, Any]:
    """The tokenizer and model (with the adapter applied, when given), in eval mode, on the GPU
    when there is one.

    ``model`` is a hub id, a directory or a GGUF file (:func:`models.resolve_model`).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = models.resolve_model(model)
    tokenizer = prompting.prepare_tokenizer(AutoTokenizer.from_pretrained(str(adapter or path)))
    policy = AutoModelForCausalLM.from_pretrained(path)
    if adapter is not None:
        from peft import PeftModel

        policy = PeftModel.from_pretrained(policy, str(adapter))
    if torch.cuda.is_available():
        policy.to("cuda")
    policy.eval()
    return tokenizer, policy


def evaluate_model(
    engine: rollouts.RolloutEngine,
    policy: policies.Policy,
    rows: Sequence[dict[str, Any]],
    *,
    batch_size: int = 8,
    label: str,
) -> list[dict[str, Any]]:
    """Play one episode per row; returns one record per episode (in row order)."""
    records = []
    for start in range(0, len(rows), batch_size):
        batch = engine.play(policy, rows[start : start + batch_size])
        for rollout in batch.rollouts:
            record = rollout.record()
            record["agent"] = label
            record["error"] = rollout.session.failure
            records.append(record)
    return records


def _rates(records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    out: dict[str, Any] = {"episodes": n}
    if not n:
        return out
    rewards = [r["reward"] for r in records]
    out["mean_reward"] = round(statistics.fmean(rewards), 4)
    out["mean_reward_ci"] = [round(x, 4) for x in stats.bootstrap_mean_ci(rewards)]
    for key, test in (
        ("security", lambda r: r["security"] == 1.0),
        ("regression", lambda r: r["regression"] == 1.0),
        ("resolved", lambda r: bool(r["resolved"])),
    ):
        passed = sum(test(r) for r in records)
        out[f"{key}_rate"] = round(passed / n, 4)
        out[f"{key}_ci"] = [round(x, 4) for x in stats.wilson_interval(passed, n)]
    out["invalid_action_rate"] = round(
        sum(r["invalid_actions"] for r in records) / max(1, sum(r["actions"] for r in records)), 4
    )
    return out


def summarise_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Overall and per-family rates of one agent's records (errored episodes apart)."""
    scored = [r for r in records if not r.get("error")]
    families = sorted({str(r["family"]) for r in scored})
    return {
        "overall": _rates(scored),
        "errors": len(records) - len(scored),
        "per_family": {f: _rates([r for r in scored if str(r["family"]) == f]) for f in families},
    }


def compare(
    base: list[dict[str, Any]], trained: list[dict[str, Any]], *, labels: tuple[str, str]
) -> dict[str, Any]:
    """Both agents' summaries and the paired difference (trained - base) of mean reward."""
    pairs = [
        (b["reward"], t["reward"])
        for b, t in zip(base, trained, strict=True)
        if not b.get("error") and not t.get("error")
    ]
    result: dict[str, Any] = {
        "labels": list(labels),
        labels[0]: summarise_records(base),
        labels[1]: summarise_records(trained),
        "pairs": len(pairs),
    }
    if pairs:
        diff = stats.paired_bootstrap_difference([t for _, t in pairs], [b for b, _ in pairs])
        result["difference"] = {
            "mean": round(diff.mean_difference, 4),
            "ci_low": round(diff.low, 4),
            "ci_high": round(diff.high, 4),
            "p_value": round(diff.p_value, 4),
        }
    return result


def write_eval(run_dir: Path, label: str, records: list[dict[str, Any]]) -> Path:
    """``eval/<label>/episodes.jsonl`` and ``summary.json`` under ``run_dir``."""
    out = run_dir / "eval" / label
    out.mkdir(parents=True, exist_ok=True)
    with (out / "episodes.jsonl").open("w", encoding="utf-8") as handle:
        for index, record in enumerate(records):
            handle.write(json.dumps({"index": index, **record}) + "\n")
    (out / "summary.json").write_text(json.dumps(summarise_records(records), indent=2))
    return out


def run_comparison(
    url: str,
    model: str,
    adapter: Path | None,
    rows: Sequence[dict[str, Any]],
    run_dir: Path,
    *,
    max_turns: int = 12,
    max_new_tokens: int = 256,
    max_completion_tokens: int = 8192,
    max_output_chars: int = 1200,
    batch_size: int = 8,
) -> dict[str, Any]:
    """Play ``rows`` with the base model (and the adapter, when given) greedily; write
    ``eval/<label>/`` and ``eval/comparison.json`` under ``run_dir``; returns the comparison
    (or the base summary alone)."""
    results: dict[str, list[dict[str, Any]]] = {}
    for label, weights in (("base", None), ("trained", adapter)):
        if label == "trained" and adapter is None:
            break
        tokenizer, policy = load_policy(model, weights)
        engine = rollouts.RolloutEngine(
            tokenizer,
            url,
            max_turns=max_turns,
            max_completion_tokens=max_completion_tokens,
            max_output_chars=max_output_chars,
        )
        greedy = policies.ModelPolicy(
            policy, tokenizer, max_new_tokens=max_new_tokens, temperature=0.0
        )
        try:
            labelled = [{**row, "agent": label} for row in rows]
            results[label] = evaluate_model(
                engine, greedy, labelled, batch_size=batch_size, label=label
            )
        finally:
            engine.close()
        write_eval(run_dir, label, results[label])
    if adapter is None:
        return {"labels": ["base"], "base": summarise_records(results["base"])}
    comparison = compare(results["base"], results["trained"], labels=("base", "trained"))
    (run_dir / "eval" / "comparison.json").write_text(json.dumps(comparison, indent=2))
    return comparison
