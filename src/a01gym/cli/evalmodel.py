"""``a01gym eval --agent local --model BASE [--adapter DIR]``: a local model, base vs trained.

The model plays through the training rollout path (:mod:`a01gym.training.compare`), greedy, on
the same jobs ``eval`` gives any agent; with ``--adapter`` the base model and base + adapter
play the same seeds (and so the same scenarios) and the run folder gets ``comparison.json``
with a paired bootstrap test of the difference.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from a01gym.errors import A01GymError, ConfigError

__all__ = ["evaluate_local"]

_console = Console(stderr=True)


def _run_dir(out: Path, split: str) -> Path:
    """A new folder per run, never an earlier run's."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for attempt in range(1000):
        path = out / (f"{stamp}-local-{split}" + (f"-{attempt}" if attempt else ""))
        with contextlib.suppress(FileExistsError):
            path.mkdir(parents=True)
            return path
    raise ConfigError("--out", f"cannot make a new run folder under {out}")


@contextlib.contextmanager
def _gateway(url: str | None, cache: Path | None, runs_dir: Path) -> Iterator[str]:
    if url:
        yield url
        return
    from a01gym.cli.background import gateway_thread

    if cache is None:
        raise ConfigError("--cache", "give --url of a running gateway, or --cache to start one")
    with gateway_thread(cache, runs_dir) as started:
        yield started


def _table(comparison: dict[str, Any]) -> Table:
    table = Table(title="a01gym eval: local model")
    for column in ("agent", "family", "episodes", "mean reward", "security", "regression"):
        table.add_column(column)
    for label in comparison["labels"]:
        summary = comparison[label]
        rows = [("all", summary["overall"]), *summary["per_family"].items()]
        for family, rates in rows:
            if not rates.get("episodes"):
                continue
            low, high = rates["mean_reward_ci"]
            table.add_row(
                label,
                family,
                str(rates["episodes"]),
                f"{rates['mean_reward']:.3f} [{low:.2f}–{high:.2f}]",
                f"{rates['security_rate']:.0%}",
                f"{rates['regression_rate']:.0%}",
            )
    return table


def evaluate_local(
    *,
    model: str | None,
    adapter: Path | None,
    jobs: list[Any],
    split: str,
    url: str | None,
    cache: Path | None,
    out: Path,
    json_output: bool,
) -> None:
    """Run the local-model eval (see the module docstring); exit 1 when an episode errored."""
    if not model:
        raise ConfigError(
            "--model", "the local agent needs --model (a hub id, a directory or a GGUF file)"
        )
    if adapter is not None and not (adapter / "adapter_config.json").is_file():
        raise ConfigError("--adapter", f"{adapter} holds no LoRA adapter (adapter_config.json)")
    try:
        from a01gym.training import compare
    except ImportError as exc:
        raise ConfigError(
            "--agent",
            f"local models need the train extra ({exc.name} is missing)",
            hint="pip install 'a01gym[train]'",
        ) from exc
    rows = [
        {"seed": job.seed, "split": split, **({"scenario": job.scenario} if job.scenario else {})}
        for job in jobs
    ]
    run_dir = _run_dir(out, split)
    with _gateway(url, cache, run_dir / "runs") as base:
        comparison = compare.run_comparison(base, model, adapter, rows, run_dir)
    _console.print(_table(comparison))
    if "difference" in comparison:
        d = comparison["difference"]
        _console.print(
            f"trained - base: {d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] "
            f"(paired bootstrap, p = {d['p_value']:.3f}, {comparison['pairs']} pairs)"
        )
    _console.print(f"wrote {run_dir / 'eval'}", soft_wrap=True)
    if json_output:
        typer.echo(json.dumps(comparison | {"run_dir": str(run_dir)}))
    errors = sum(comparison[label]["errors"] for label in comparison["labels"])
    if errors:
        raise A01GymError(
            f"{errors} episodes failed in the environment; rewards cover the others",
            hint=f"see the error field of the rows under {run_dir / 'eval'}",
        )
