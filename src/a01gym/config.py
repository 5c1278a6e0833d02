"""Process configuration: one :class:`Settings` with a section per component.

Sources, strongest first: arguments, ``A01GYM_*`` environment variables, then the YAML (or
JSON) file named by ``A01GYM_CONFIG``. Nested fields use ``__``
(``A01GYM_SANDBOX__POOL_SIZE=8``, ``A01GYM_GATEWAY__PORT=8000``), so Helm values map onto env
vars one to one, and the file has the same shape (``sandbox: {pool_size: 8}``). Build it
through :func:`get_settings`, never at import time.

The sandbox's and grading's sections are here; the others are in a module each, named after
their section: :mod:`a01gym.gateway_settings`, :mod:`a01gym.backend_settings` (``docker``,
``kubernetes``), :mod:`a01gym.operator_settings`, :mod:`a01gym.expert_settings` (and the
sandbox's ``pool_growth``, :mod:`a01gym.pool_settings`).
"""

from __future__ import annotations

import difflib
import functools
import os
import tempfile
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from a01gym import capacity
from a01gym.backend_settings import DockerBackendSettings, KubernetesBackendSettings
from a01gym.errors import ConfigError
from a01gym.expert_settings import ExpertSettings
from a01gym.gateway_settings import GatewaySettings
from a01gym.operator_settings import OperatorSettings
from a01gym.pool_settings import PoolGrowthSettings

__all__ = [
    "CONFIG_ENV",
    "OTHER_VARIABLES",
    "GradingSettings",
    "SandboxLimits",
    "SandboxSettings",
    "Settings",
    "get_settings",
    "with_overrides",
]

CONFIG_ENV = "A01GYM_CONFIG"
"""Names the optional YAML/JSON settings file."""

OTHER_VARIABLES = {
    CONFIG_ENV: "Path of a YAML/JSON settings file shaped like the settings object (sections "
    "as keys); variables and command-line options win over it.",
    "A01GYM_LOG_FORMAT": "`text` or `json`: the log format of every `a01gym` command "
    "(its `--log-format`).",
    "A01GYM_GATEWAY_URL": "The gateway a client (the trainer's rollouts, `A01ToolEnv`) connects "
    "to when it is given no URL.",
    "A01GYM_GATEWAY_TOKEN": "The bearer token `a01gym train` presents to its gateway (the "
    "chart's GRPO Job sets it from the gateway's token Secret).",
    "A01GYM_LLM_MODEL": "The model of the factory's LLM author when its config names none.",
    "A01GYM_MODEL_CACHE": "Where GGUF model files are converted to model directories, one per "
    "file's sha256 (default `~/.cache/a01gym/models`).",
}
"""Every ``A01GYM_*`` variable read outside :class:`Settings`: whose process reads it, not
server settings. With the settings these are all there are (``docs/settings.md`` lists both,
and a test fails on a variable named anywhere else)."""

_Section = TypeVar("_Section", bound=BaseModel)


def _sandbox_root() -> Path:
    """``/dev/shm/a01gym-sandboxes`` when /dev/shm is writable, else under the temp dir."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm / "a01gym-sandboxes"
    return Path(tempfile.gettempdir()) / "a01gym-sandboxes"


class SandboxLimits(BaseModel):
    """Per-sandbox resource limits, applied to every process inside the sandbox."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    address_space_mb: int = Field(1024, ge=256, description="RLIMIT_AS per process, MiB.")
    cpu_seconds: int = Field(600, ge=1, description="RLIMIT_CPU per process, seconds.")
    file_size_mb: int = Field(16, ge=1, description="RLIMIT_FSIZE, MiB.")
    open_files: int = Field(256, ge=32, description="RLIMIT_NOFILE.")
    processes: int = Field(128, ge=16, description="RLIMIT_NPROC for the sandbox's own uid.")
    wall_clock_seconds: float = Field(
        3600.0, gt=0, description="The zygote kills the sandbox after this long."
    )
    nice: int = Field(
        5, ge=0, le=19, description="Scheduling niceness, so the host stays responsive."
    )


class SandboxSettings(BaseModel):
    """Settings of the local sandbox backend."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    root: Path = Field(
        default_factory=_sandbox_root,
        description="Directory under which each sandbox gets its own folder. Defaults to "
        "/dev/shm: every app writes SQLite, and fsync on a disk costs ~20 ms per transaction.",
    )
    pool_size: int = Field(4, ge=0, description="Warm sandboxes kept ready for acquire().")
    pool_growth: PoolGrowthSettings = Field(default_factory=PoolGrowthSettings)
    refill_delay_s: float = Field(
        0.1,
        ge=0,
        description="While idle sandboxes remain, wait this long before refilling, so the "
        "episode that just acquired one gets the CPU for its app start first.",
    )
    max_sandboxes: int = Field(
        default_factory=capacity.default_max_sandboxes,
        ge=1,
        description="Hard cap on live sandboxes. Default: what fits in 60% of available memory "
        f"at {capacity.SANDBOX_MB} MB each (see default_max_sandboxes).",
    )
    start_concurrency: int = Field(
        default_factory=capacity.default_start_concurrency,
        ge=1,
        description="Sandbox spawns and app starts worked on at once (default: four per CPU); "
        "the rest queue, and a start's timeout counts only from when it gets its turn.",
    )
    acquire_timeout_s: float = Field(
        45.0,
        gt=0,
        description="How long getting a sandbox (a free slot under max_sandboxes, a turn to "
        "start it or its app) may wait before the reset fails; under the stock OpenEnv "
        "client's 60 s message timeout, so the client sees the reason.",
    )
    isolation: Literal["warn", "strict"] = Field(
        "warn",
        description="'strict' refuses to start when any isolation layer is missing; "
        "'warn' prints one warning naming what is missing and continues.",
    )
    filesystem: Literal["auto", "landlock", "bwrap"] = Field(
        "auto",
        description="How sandboxes are kept out of the rest of the filesystem: Landlock rules, "
        "or a bubblewrap mount view; 'auto' prefers Landlock and falls back to bubblewrap.",
    )
    uid_base: int = Field(
        200_000, ge=1000, description="Sandbox n runs as uid/gid uid_base + n (when root)."
    )
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    preload: list[Literal["sqlalchemy"]] = Field(
        [],
        description="Optional libraries the zygote imports when it starts, instead of when "
        "the first app that needs one starts (that app then waits ~0.3 s). Each makes every "
        "sandbox's start cost a little more CPU, so name only what most scenarios use: "
        "'sqlalchemy' for the factory's ORM style.",
    )
    warm_standby: bool = Field(
        True,
        description="Each pool sandbox's standby app warms up on spare CPU: ~8 ms less to "
        "acquire a sandbox, ~0.55 MB more memory per sandbox.",
    )
    max_file_bytes: int = Field(
        256 * 1024, ge=1024, description="Largest file the agent may write."
    )
    max_request_bytes: int = Field(
        1024 * 1024, ge=1024, description="Largest control request body (excluding workspaces)."
    )
    max_workspace_bytes: int = Field(
        16 * 1024 * 1024, ge=1024, description="Largest workspace accepted (sum of file sizes)."
    )
    app_start_timeout_s: float = Field(10.0, gt=0, description="Time allowed for the app to start.")
    app_request_timeout_s: float = Field(10.0, gt=0, description="Time allowed per app request.")


class GradingSettings(BaseModel):
    """Bounds on the terminal hidden run, so a hanging, crashing or forking app is graded
    (fail-closed) before a trainer's client gives up on the episode."""

    model_config = ConfigDict(extra="forbid")  # a misspelt setting is an error

    # 30 s, not the former 12: a suite that uses every clause of the policy (64-67 tests)
    # graded reference fixes in 6.9-10.8 s on a loaded 2-core real node, and under CI's load
    # past 12 s, where a correct fix scored 0 (docs/families.md). A misbehaving app still
    # ends its run at the first failed regression (8-10 s, bench/grading.py).
    deadline_s: float = Field(
        30.0,
        gt=0,
        description="The terminal step (reading the final files, then app start and hidden "
        "tests on a fresh sandbox) answers within this, plus any wait for that sandbox, "
        "which the backend bounds; tests not run by then count as not passed. Keep it well "
        "under the client's message timeout (60 s for the stock OpenEnv client).",
    )
    request_timeout_s: float = Field(
        3.0,
        gt=0,
        le=60,
        description="Per app request in a hidden run (also bounded by the deadline); a slower "
        "answer makes its test inconclusive.",
    )


class Settings(BaseSettings):
    """Top-level process settings: one section per component."""

    model_config = SettingsConfigDict(
        env_prefix="A01GYM_", env_nested_delimiter="__", extra="ignore"
    )

    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    docker: DockerBackendSettings = Field(default_factory=DockerBackendSettings)
    kubernetes: KubernetesBackendSettings = Field(default_factory=KubernetesBackendSettings)
    operator: OperatorSettings = Field(default_factory=OperatorSettings)
    expert: ExpertSettings = Field(default_factory=ExpertSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = os.environ.get(CONFIG_ENV)
        if not path:
            return init_settings, env_settings
        if not Path(path).is_file():
            raise ConfigError(CONFIG_ENV, f"no such file {path}", hint="fix or unset it")
        # YAML is a superset of JSON, so one source reads both.
        return init_settings, env_settings, _SectionCheckedSource(settings_cls, Path(path))


class _SectionCheckedSource(YamlConfigSettingsSource):
    """The settings file, refusing top-level keys that are not sections: :class:`Settings`
    ignores unknown ``A01GYM_*`` variables, but a misspelt section in a file is a mistake."""

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        sections = sorted(Settings.model_fields)
        for key in data:
            if key not in Settings.model_fields:
                raise ConfigError(
                    CONFIG_ENV,
                    f"unknown section {key!r} in {os.environ.get(CONFIG_ENV)}",
                    hint=_suggestion(key, sections, "sections"),
                )
        return data


def _suggestion(name: str, known: list[str], kind: str) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    listed = f"{kind}: {', '.join(known)}"
    return f"did you mean {close[0]!r}? {listed}" if close else listed


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The settings model that holds the field at ``loc`` (``("gateway", "port")``)."""
    model: type[BaseModel] = Settings
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _explain(error: ErrorDetails) -> ConfigError:
    """One :class:`ConfigError` for the first invalid setting, naming where it came from: an
    ``A01GYM_*`` variable that is set, else the settings file."""
    where = [str(p) for p in error["loc"]]
    variable = "A01GYM_" + "__".join(where).upper()
    dotted = ".".join(where)
    from_env = variable in {k.upper() for k in os.environ}
    if error["type"] == "extra_forbidden":
        model = _model_at(error["loc"])
        known = sorted(model.model_fields) if model is not None else []
        return ConfigError(
            variable if from_env else dotted,
            f"unknown setting {dotted!r}"
            + ("" if from_env else f" in the {CONFIG_ENV} file {os.environ.get(CONFIG_ENV)}"),
            hint=_suggestion(where[-1], known, "fields") if known else "remove it",
        )
    if from_env:
        return ConfigError(variable, error["msg"], hint=f"fix or unset {variable}")
    return ConfigError(
        dotted,
        error["msg"],
        hint=f"fix {dotted} in the {CONFIG_ENV} file, or set {variable}",
    )


@functools.cache
def get_settings() -> Settings:
    """Return the process settings, built once.

    Raises:
        ConfigError: naming the first invalid field as its environment variable.
    """
    import yaml  # here, not at the top: sandboxes import this module and have no PyYAML

    try:
        return Settings()
    except ValidationError as exc:
        raise _explain(exc.errors()[0]) from exc
    except (yaml.YAMLError, ValueError, TypeError) as exc:  # the file is not a mapping of YAML
        raise ConfigError(CONFIG_ENV, f"unreadable settings file: {exc}") from exc


def with_overrides(
    section: _Section, *, names: dict[str, str] | None = None, **overrides: Any
) -> _Section:
    """``section`` with some fields replaced (say, from command-line options), validated
    (an unknown field is an error too).

    Args:
        section: the settings to start from.
        names: what to call a field in an error, e.g. ``{"port": "--port"}``, so a bad option
            value reads like a bad environment variable.
        **overrides: the new values.

    Raises:
        ConfigError: naming the first invalid field.
    """
    try:
        return type(section).model_validate({**section.model_dump(), **overrides})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        name = (names or {}).get(field, field)
        value = overrides.get(field, "")
        raise ConfigError(
            name, f"{first['msg']} (got {value!r})" if field in overrides else first["msg"]
        ) from exc
