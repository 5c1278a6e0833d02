"""Options with a fixed set of choices take them from the setting they feed.

Each such option is typed with a ``Literal``, which typer turns into a usage error (exit 2)
that names the choices (``tests/integration/cli/test_cli_errors.py`` runs the script). Where
the CLI keeps its own literal (to list the choices without importing the stack behind them),
these tests hold it equal to its source of truth, so a new backend, agent, author or band
cannot be missing from the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin, get_type_hints

from a01gym import gateway_settings
from a01gym.cli import __main__ as main_cli
from a01gym.cli import eval as eval_cli
from a01gym.cli import factory as factory_cli
from a01gym.cli import logs, serve
from a01gym.factory import split
from a01gym.factory.config import AuthorConfig, FactoryConfig
from a01gym.training import agents


def _choices(command: Callable[..., Any], parameter: str) -> set[str]:
    """The literal values an option accepts (``None``, "not given", left out)."""
    hint = get_args(get_type_hints(command, include_extras=True)[parameter])[0]  # in Annotated
    (literal,) = [t for t in (hint, *get_args(hint)) if get_origin(t) is Literal]
    return set(get_args(literal))


def test_serve_backends_are_the_gateway_settings() -> None:
    backends = set(get_args(gateway_settings.GatewaySettings.model_fields["backend"].annotation))
    assert backends == {"local", "docker", "kubernetes"}
    assert _choices(serve.serve, "backend") == backends


def test_eval_agents_are_the_baselines_plus_a_local_model() -> None:
    assert get_args(eval_cli.AgentName) == (*agents.AGENT_NAMES, "local")
    assert _choices(eval_cli.eval_command, "agent") == set(get_args(eval_cli.AgentName))


def test_factory_choices_are_the_factory_configs() -> None:
    kinds = get_args(AuthorConfig.model_fields["kind"].annotation)
    assert get_args(factory_cli.AuthorKind) == kinds
    assert _choices(factory_cli.build, "author") == set(kinds)
    (band,) = get_args(FactoryConfig.model_fields["difficulty"].annotation)[:1]
    assert get_args(factory_cli.Difficulty) == get_args(band)
    assert _choices(factory_cli.list_entries, "difficulty") == set(get_args(band))
    assert _choices(factory_cli.list_entries, "split") == set(get_args(split.Split))
    assert _choices(factory_cli.stats, "split") == set(get_args(split.Split))


def test_log_formats_are_what_logging_takes() -> None:
    assert _choices(main_cli._root, "log_format") == set(get_args(logs.LogFormat))
    assert set(get_args(logs.LogFormat)) == {"text", "json"}
