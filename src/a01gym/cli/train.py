"""``a01gym train``: GRPO + LoRA against a gateway (``--smoke``: tiny local model, CPU, minutes).

Starts a gateway in a background thread on ``gateway.cache`` unless ``gateway.url`` names a
running one (for example a cluster's), optionally warm-starts with SFT, then trains. Trackio
stores metrics under the run directory (``trackio/``), never on the network.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from a01gym.errors import ConfigError

__all__ = ["train_command"]

_console = Console(stderr=True)


@contextlib.contextmanager
def _gateway(url: str | None, cache: Path | None, runs_dir: Path) -> Iterator[str]:
    if url:
        yield url
        return
    from a01gym.cli.background import gateway_thread

    assert cache is not None  # TrainConfig guarantees url or cache
    if not cache.exists():
        raise ConfigError(
            "gateway.cache",
            f"no scenario cache at {cache}",
            hint="build one with `a01gym factory build` (or run `make demo` once)",
        )
    with gateway_thread(cache, runs_dir) as started:
        yield started


def train_command(
    config: Annotated[
        Path | None, typer.Option(help="Training config (YAML/JSON); see examples/train.yaml.")
    ] = None,
    smoke: Annotated[
        bool,
        typer.Option(help="Tiny local model, solver SFT warm start, 2 GRPO steps on CPU."),
    ] = False,
    output_dir: Annotated[
        Path | None, typer.Option(help="Run directory (overrides config).")
    ] = None,
    gateway_url: Annotated[
        str | None, typer.Option(help="A running gateway (overrides config).")
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="Scenario cache (overrides config).")] = None,
    max_steps: Annotated[int | None, typer.Option(min=1, help="GRPO steps (overrides).")] = None,
    sft: Annotated[
        Path | None,
        typer.Option(help="Warm-start with SFT on this dataset (from export-trajectories)."),
    ] = None,
) -> None:
    """Train a LoRA adapter with GRPO on the environment's terminal reward."""
    from a01gym.training import config as train_config

    overrides: dict[str, object] = {}
    if output_dir is not None:
        overrides["output_dir"] = str(output_dir)
    if gateway_url is not None:
        overrides["gateway.url"] = gateway_url
    if cache is not None:
        overrides["gateway.cache"] = str(cache)
    if sft is not None:
        overrides["sft.dataset"] = str(sft)
    cfg = train_config.load_config(config, **overrides)
    if smoke:
        from a01gym.training import smoke as smoke_run

        cfg = train_config.load_config(
            config, **{**_unset(cfg, smoke_run.SMOKE_OVERRIDES), **overrides}
        )
    elif cfg.model is None:
        raise ConfigError("model", "no model to train", hint="set `model:` or pass --smoke")
    else:  # a bad path or GGUF file fails here, before a gateway starts
        from a01gym.training import models

        cfg.model = models.resolve_model(cfg.model, field="model")
        _console.print(f"model: {cfg.model}", soft_wrap=True)
    if max_steps is not None:
        cfg.grpo["max_steps"] = max_steps
    out = cfg.output_dir
    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRACKIO_DIR"] = str((out / "trackio").resolve())  # read when trackio is imported
    try:
        from a01gym.training import grpo
    except ImportError as exc:
        raise ConfigError(
            "train",
            f"training needs the train extra ({exc.name} is not installed)",
            hint="pip install 'a01gym[train]'",
        ) from exc

    if smoke and cfg.gateway.url is None and cfg.gateway.cache and not cfg.gateway.cache.exists():
        from a01gym.factory import pipeline

        _console.print(f"smoke: building a 12-scenario cache at {cfg.gateway.cache}")
        pipeline.build_demo(cfg.gateway.cache, count=12, seed=cfg.seed)
    episode_logs = out / "episodes"
    with _gateway(cfg.gateway.url, cfg.gateway.cache, episode_logs) as address:
        _console.print(f"training against the gateway at {address}")
        url = _with_token(address)
        model = cfg.model
        if smoke:
            from a01gym.training import smoke as smoke_run

            if cfg.gateway.cache is None:
                raise ConfigError("gateway.cache", "--smoke reads the solver's fixes from a cache")
            _console.print("smoke: solver episodes -> SFT data -> tiny model -> warm start")
            model, _ = smoke_run.prepare(
                cfg, url=url, cache=cfg.gateway.cache, episode_logs=episode_logs
            )
        elif cfg.sft.dataset is not None:
            from a01gym.training import sft

            _console.print(f"SFT warm start on {cfg.sft.dataset}")
            model = str(
                sft.warm_start(model, cfg.sft.dataset, out / "sft-model", cfg.sft, seed=cfg.seed)
            )
        _console.print(f"GRPO + LoRA on {model}")
        grpo.train(cfg, model_path=str(model), gateway_url=url)
    _console.print(
        f"wrote {out / 'adapter'}, {out / 'metrics.jsonl'} and Trackio in {out / 'trackio'}"
    )


def _with_token(url: str) -> str:
    """``url`` with the gateway token from ``A01GYM_GATEWAY_TOKEN`` leading its path (the stock
    OpenEnv client sends no headers); kept out of the config, so no run file records it."""
    token = os.environ.get("A01GYM_GATEWAY_TOKEN")
    return f"{url.rstrip('/')}/t/{token}" if token else url


def _unset(cfg: object, defaults: dict[str, object]) -> dict[str, object]:
    """The smoke defaults for every key the config file left at its default."""
    from a01gym.training import config as train_config

    fresh = train_config.TrainConfig().model_dump()
    current = cfg.model_dump()  # type: ignore[attr-defined]
    chosen = {}
    for dotted, value in defaults.items():
        node_fresh, node_current = fresh, current
        for part in dotted.split("."):
            node_fresh, node_current = node_fresh.get(part), node_current.get(part)
        if node_fresh == node_current:
            chosen[dotted] = value
    return chosen
