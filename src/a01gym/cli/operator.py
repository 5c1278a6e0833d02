"""``a01gym operator``: run the Kubernetes operator, or print its CRDs.

Mounted by the root command as a group: ``a01gym operator`` (or ``a01gym operator run``)
starts it; ``a01gym operator crds`` prints the CRD YAML the chart ships.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["app", "crds", "run"]

app = typer.Typer(help="The Kubernetes operator (Episode and SandboxPool CRDs).")


@app.callback(invoke_without_command=True)
def _default(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        run()


@app.command()
def run(
    namespace: Annotated[
        str | None,
        typer.Option(help="Namespace to watch (default: A01GYM_OPERATOR__NAMESPACE)."),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Prometheus port, 0 = off (default: A01GYM_OPERATOR__METRICS_PORT)."),
    ] = None,
) -> None:
    """Run the operator until interrupted."""
    from a01gym.config import get_settings, with_overrides
    from a01gym.operator import runner

    settings = get_settings().operator
    update = {
        k: v
        for k, v in {"namespace": namespace, "metrics_port": metrics_port}.items()
        if v is not None
    }
    runner.run(with_overrides(settings, **update))


@app.command()
def crds() -> None:
    """Print the CRDs as multi-document YAML (the chart's crds/ are generated from this)."""
    import yaml

    from a01gym.operator import crd

    typer.echo(yaml.safe_dump_all(crd.all_crds(), sort_keys=False), nl=False)


if __name__ == "__main__":
    app()
