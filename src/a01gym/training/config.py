"""``a01gym train`` configuration: one YAML/JSON file, validated before anything heavy loads.

Sections mirror what a post-training engineer tunes: the model, the LoRA adapter, GRPO (passed
through to TRL's ``GRPOConfig``, which validates its own fields), the rollouts, the gateway and
the slice of scenarios, the generation backend, an optional SFT warm start, Trackio, and the
adaptive expert ratio (:mod:`a01gym.training.expertratio`).
Unknown keys are errors that name the nearest valid key, so a typo never silently trains with a
default.
"""

from __future__ import annotations

import difflib
import enum
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from a01gym.errors import ConfigError
from a01gym.training.expertratio import ExpertRatioSettings

__all__ = [
    "GenerationBackend",
    "LoraSettings",
    "RolloutPath",
    "RolloutSettings",
    "SftSettings",
    "TrainConfig",
    "load_config",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GenerationBackend(enum.StrEnum):
    """Who generates: transformers in-process (CPU or one GPU) or vLLM (GPU, TRL-managed)."""

    TRANSFORMERS = "transformers"
    VLLM_COLOCATE = "vllm-colocate"
    VLLM_SERVER = "vllm-server"


class RolloutPath(enum.StrEnum):
    """``parallel``: our rollout_func (env steps overlapped across the batch; transformers only).
    ``trl``: TRL's own environment_factory loop with :class:`A01ToolEnv` (needed for vLLM)."""

    PARALLEL = "parallel"
    TRL = "trl"


class LoraSettings(_Section):
    r: int = Field(8, ge=1, description="LoRA rank.")
    alpha: int = Field(16, ge=1, description="LoRA alpha.")
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        description="Module names to adapt (never lm_head: TRL refuses it).",
    )


class RolloutSettings(_Section):
    path: RolloutPath = RolloutPath.PARALLEL
    max_turns: int = Field(8, ge=1, description="Tool calls per episode before auto-submit.")
    max_new_tokens: int = Field(256, ge=8, description="Tokens per model turn.")
    max_completion_tokens: int = Field(
        2048, ge=64, description="Model + tool tokens per episode (TRL max_completion_length)."
    )
    max_output_chars: int = Field(1200, ge=200, description="Tool output kept per step.")
    temperature: float = Field(1.0, ge=0.0)


class GatewayTarget(_Section):
    """The gateway the rollouts use: a running one, or one started in-process on a cache."""

    url: str | None = Field(None, description="A running gateway; null starts one in-process.")
    cache: Path | None = Field(None, description="Scenario cache for the in-process gateway.")

    @model_validator(mode="after")
    def _one_source(self) -> GatewayTarget:
        if self.url is None and self.cache is None:
            raise ValueError("set gateway.url (a running gateway) or gateway.cache")
        return self


class DataSettings(_Section):
    split: str = "train"
    families: list[str] = Field(default_factory=list, description="Empty: every family.")
    difficulty: str | None = None
    seed_start: int = Field(0, ge=0)
    seeds: int = Field(64, ge=1, description="Distinct episodes (dataset rows).")
    scenarios: list[str] = Field(
        default_factory=list, description="Scenario hashes to cycle through (empty: sampled)."
    )


class SftSettings(_Section):
    dataset: Path | None = Field(None, description="From `a01gym export-trajectories`.")
    epochs: float = Field(3.0, gt=0)
    learning_rate: float = Field(2e-4, gt=0)
    full: bool = Field(False, description="Train all weights (tiny models) instead of LoRA.")
    max_length: int = Field(8192, ge=128)
    batch_size: int = Field(1, ge=1)


class TrackioSettings(_Section):
    project: str = "a01gym"
    run_name: str | None = None


class TrainConfig(_Section):
    """Everything ``a01gym train`` needs; ``resolved()`` is what lands in the run directory."""

    model: str | None = Field(
        None, description="Hub id, local directory or GGUF file; null with --smoke."
    )
    output_dir: Path = Path("runs/train")
    seed: int = 0
    gateway: GatewayTarget = Field(
        default_factory=lambda: GatewayTarget(cache=Path(".cache/demo-scenarios"))
    )
    data: DataSettings = Field(default_factory=DataSettings)
    lora: LoraSettings = Field(default_factory=LoraSettings)
    rollout: RolloutSettings = Field(default_factory=RolloutSettings)
    generation: GenerationBackend = GenerationBackend.TRANSFORMERS
    vllm_server_url: str | None = None
    sft: SftSettings = Field(default_factory=SftSettings)
    trackio: TrackioSettings = Field(default_factory=TrackioSettings)
    expert: ExpertRatioSettings = Field(
        default_factory=ExpertRatioSettings,
        description="Adaptive share of expert-enabled rollouts per GRPO group (off by default).",
    )
    grpo: dict[str, Any] = Field(
        default_factory=dict, description="Extra trl.GRPOConfig fields (learning_rate, beta, …)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> TrainConfig:
        if self.generation != GenerationBackend.TRANSFORMERS and (
            self.rollout.path == RolloutPath.PARALLEL
        ):
            raise ValueError(
                f"generation {self.generation.value!r} needs rollout.path: trl "
                "(the parallel rollout generates with transformers)"
            )
        if self.generation == GenerationBackend.VLLM_SERVER and not self.vllm_server_url:
            raise ValueError("generation vllm-server needs vllm_server_url")
        return self

    def resolved(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _nearest(error: dict[str, Any], model: type[BaseModel]) -> str:
    """A hint naming the valid key closest to an unknown one."""
    *parents, key = [str(p) for p in error["loc"]]
    fields: Any = model.model_fields
    for parent in parents:
        annotation = fields.get(parent).annotation if parent in fields else None
        fields = getattr(annotation, "model_fields", {})
    match = difflib.get_close_matches(key, list(fields), n=1)
    return f" (did you mean {'.'.join([*parents, match[0]])!r}?)" if match else ""


class _Loader(yaml.SafeLoader):
    """YAML 1.2 floats: PyYAML (YAML 1.1) reads ``1e-5`` as a string, a classic config trap."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)$|^[-+]?[0-9]*\.[0-9]+$"),
    list("-+0123456789."),
)


def load_config(path: Path | None, **overrides: Any) -> TrainConfig:
    """Read a YAML or JSON config and apply dotted overrides (``{"data.seeds": 8}``).

    Raises:
        ConfigError: naming the file and the first bad field.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(str(path), f"cannot read the training config: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(str(path), "the training config must be a mapping")
    for dotted, value in overrides.items():
        target = data
        *parents, key = dotted.split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
        target[key] = value
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        hint = _nearest(first, TrainConfig) if first["type"] == "extra_forbidden" else ""
        raise ConfigError(
            str(path or "config"), f"{where}: {first['msg']}{hint}", hint="see examples/train.yaml"
        ) from exc
