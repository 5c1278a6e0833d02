"""The ``a01gym`` command: mounts each command group; every command is a thin wrapper.

:func:`main` is the one place where errors become exit codes:

* 0 success; ``-h``/``--help`` print help and exit 0;
* 2 usage errors (an unknown option, a missing one, a value of the wrong type, a value outside
  an option's fixed choices, which the message lists): typer prints the usage and the
  problem. A bare ``a01gym`` (or a bare group) prints help and exits 2, click's convention
  for "no command given";
* 1 every other error, as one line saying what to do next: an :class:`A01GymError` (an
  option value that only a01gym can judge, such as a port out of range or a split the cache
  lacks, and bad ``A01GYM_*`` variables become :class:`ConfigError`) or an ``OSError``;
* 130 Ctrl-C.
"""

from __future__ import annotations

from typing import Annotated

import typer

from a01gym import __version__
from a01gym.cli import (
    analyze,
    clauses,
    demo,
    factory,
    operator,
    play,
    report,
    sandbox,
    serve,
    train,
)
from a01gym.cli import eval as eval_cli
from a01gym.cli import trajectories as trajectories_cli
from a01gym.cli.logs import LogFormat, configure_logging
from a01gym.errors import A01GymError

__all__ = ["app", "main"]

app = typer.Typer(
    name="a01gym",
    help="An OpenEnv RL environment for finding and fixing broken access control (OWASP A01).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
app.add_typer(factory.app, name="factory")
factory.app.command("clauses")(clauses.clauses_command)
app.add_typer(operator.app, name="operator")
app.add_typer(sandbox.app, name="sandbox")
app.command("serve")(serve.serve)
app.command("eval")(eval_cli.eval_command)
app.command("demo")(demo.demo_command)
app.command("export-trajectories")(trajectories_cli.export_command)
app.command("report")(report.report_command)
app.command("train")(train.train_command)
app.command("play")(play.play_command)
app.command("analyze")(analyze.analyze_command)


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, help="More logs.")] = 0,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Errors only.")] = False,
    log_format: Annotated[
        LogFormat, typer.Option("--log-format", help="Log format.", envvar="A01GYM_LOG_FORMAT")
    ] = "text",
) -> None:
    configure_logging(-1 if quiet else verbose, log_format)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: usage errors exit 2, every other error one line and exit 1."""
    try:
        # Standalone mode lets typer print usage errors and turn typer.Exit into exit codes.
        app(args=argv, standalone_mode=True)
    except A01GymError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise SystemExit(1) from None
    except OSError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
