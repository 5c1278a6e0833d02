"""Factory configuration: what to build, how to author it, how to split and gate it.

Loaded from YAML or JSON (``examples/factory.yaml``). Every model is ``extra="forbid"`` so a
typo is an error, and :func:`load_config` names the offending field in a
:class:`~a01gym.errors.ConfigError`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from a01gym.errors import ConfigError
from a01gym.factory import domains, families, giveaways

__all__ = [
    "AuthorConfig",
    "FactoryConfig",
    "GateConfig",
    "LLMConfig",
    "SplitConfig",
    "load_config",
    "validate_config",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _known(what: str, known: Iterable[str], *, required: bool = False) -> AfterValidator:
    """A list of names, each of them ``known`` (and at least one if ``required``)."""

    def check(value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(known))
        if unknown or (required and not value):
            some = "unknown or no" if required else "unknown"
            raise ValueError(f"{some} {what} {unknown}; known: {sorted(known)}")
        return value

    return AfterValidator(check)


_Domains = Annotated[list[str], _known("domains", domains.DOMAINS)]
_Families = Annotated[list[str], _known("families", families.FAMILIES)]
_SomeDomains = Annotated[list[str], _known("domains", domains.DOMAINS, required=True)]
_SomeFamilies = Annotated[list[str], _known("families", families.FAMILIES, required=True)]
_Probes = Annotated[list[str], _known("probes", giveaways.PROBES)]


class LLMConfig(_Model):
    """An OpenAI-compatible endpoint for the LLM author."""

    base_url: str | None = Field(
        None, description="e.g. http://127.0.0.1:8000/v1; falls back to $OPENAI_BASE_URL."
    )
    model: str | None = Field(None, description="Model name; falls back to $A01GYM_LLM_MODEL.")
    api_key: str | None = Field(
        None, description="Key; falls back to $OPENAI_API_KEY (a local server may ignore it)."
    )
    max_attempts: int = Field(3, ge=1, le=10, description="Drafts per spec before giving up.")
    timeout_s: float = Field(60.0, gt=0, description="Per-request timeout.")
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(
        4096, ge=256, le=32768, description="Cap on one draft's length (a spec is ~1-2k tokens)."
    )


class AuthorConfig(_Model):
    """Which author writes the specs."""

    kind: Literal["template", "llm"] = "template"
    llm: LLMConfig = Field(default_factory=LLMConfig)


class SplitConfig(_Model):
    """Held-out parts of the catalog: anything in an eval domain OR an eval family is eval."""

    eval_domains: _Domains = Field(
        default_factory=lambda: ["hr_records", "lab", "pharmacy"],
        description="Domains never seen in train.",
    )
    eval_families: _Families = Field(
        default_factory=lambda: ["F09", "F17"], description="Families never seen in train."
    )


class GateConfig(_Model):
    """How candidates are verified in real sandboxes."""

    workers: int = Field(2, ge=1, le=256, description="Concurrent sandbox verifications.")
    enabled: bool = Field(True, description="Off only for offline dry runs; nothing is admitted.")
    giveaways: Literal["off", "report", "reject"] = Field(
        "reject",
        description="The giveaway gate, after the candidates' own gates: the shortcut probes "
        "run over the whole cache, and a family whose bug one finds far above chance has the "
        "scenarios of this build that probe finds rejected, until the rest is no longer far "
        "above it (report: only listed in the summary).",
    )
    giveaway_probes: _Probes = Field(
        default_factory=lambda: [p for p in giveaways.PROBES if p != "largest_file"],
        description="Probes the giveaway gate applies (all are reported). largest_file is "
        "left out by default: the repository is the largest file of every app, bug or not.",
    )


class FactoryConfig(_Model):
    """A factory run."""

    seed: int = Field(0, ge=0, lt=2**63)
    count: int = Field(50, ge=1, le=100_000, description="Candidates to author.")
    domains: _SomeDomains = Field(default_factory=lambda: sorted(domains.DOMAINS))
    families: _SomeFamilies = Field(default_factory=lambda: sorted(families.FAMILIES))
    difficulty: dict[Literal["easy", "medium", "hard"], float] = Field(
        default_factory=lambda: {"easy": 0.3, "medium": 0.45, "hard": 0.25},
        description="Relative weights of the bands drafted for (each draws its knobs); the label "
        "is measured on the compiled scenario, and a hard draft can be labelled medium.",
    )
    author: AuthorConfig = Field(default_factory=AuthorConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    gates: GateConfig = Field(default_factory=GateConfig)

    @model_validator(mode="after")
    def _weights(self) -> FactoryConfig:
        if not self.difficulty or sum(self.difficulty.values()) <= 0:
            raise ValueError("difficulty weights must have a positive sum")
        if any(w < 0 for w in self.difficulty.values()):
            raise ValueError("difficulty weights must not be negative")
        return self

    def digest(self) -> str:
        """sha256 of the config without secrets (provenance in the cache index)."""
        data = self.model_dump(mode="json")
        data["author"]["llm"]["api_key"] = None
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def load_config(path: Path | str, **overrides: object) -> FactoryConfig:
    """Read a YAML or JSON config file, apply top-level ``overrides`` (None = keep).

    Raises:
        ConfigError: when the file is missing or unparsable, or a field is invalid; the
            message names the field (``gates.workers``) and the problem.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(
            str(path), f"not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}"
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("(root)", f"expected a mapping, got {type(data).__name__}")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return validate_config(data)


def validate_config(data: dict[str, object]) -> FactoryConfig:
    """Validate a config mapping.

    Raises:
        ConfigError: naming the first invalid field.
    """
    try:
        return FactoryConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ConfigError(where, first["msg"], hint="see examples/factory.yaml") from exc
