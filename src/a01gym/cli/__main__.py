"""The ``a01gym`` command: mounts each command group; every command is a thin wrapper."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from a01gym import __version__
from a01gym.cli import demo, factory, operator, report, sandbox, serve, train
from a01gym.cli import eval as eval_cli
from a01gym.cli import trajectories as trajectories_cli
from a01gym.cli.logs import configure_logging
from a01gym.errors import A01GymError

__all__ = ["app", "main"]

app = typer.Typer(
    name="a01gym",
    help="An OpenEnv RL environment for finding and fixing broken access control (OWASP A01).",
    no_args_is_help=True,
)
app.add_typer(factory.app, name="factory")
app.add_typer(operator.app, name="operator")
app.add_typer(sandbox.app, name="sandbox")
app.command("serve")(serve.serve)
app.command("eval")(eval_cli.eval_command)
app.command("demo")(demo.demo_command)
app.command("export-trajectories")(trajectories_cli.export_command)
app.command("report")(report.report_command)
app.command("train")(train.train_command)


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, help="More logs.")] = 0,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Errors only.")] = False,
    log_format: Annotated[
        str, typer.Option("--log-format", help="text or json", envvar="A01GYM_LOG_FORMAT")
    ] = "text",
) -> None:
    fmt: Literal["text", "json"] = "json" if log_format == "json" else "text"
    configure_logging(-1 if quiet else verbose, fmt)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main() -> None:
    """Console-script entry: errors become one readable line and exit code 1."""
    try:
        app(standalone_mode=False)
    except A01GymError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            raise SystemExit(exc.exit_code) from None
        raise


if __name__ == "__main__":
    main()
