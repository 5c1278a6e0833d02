"""``a01gym factory``: build, list, show, validate and measure scenario caches.

Thin wrappers over :mod:`a01gym.factory`. Progress and tables go to stderr, ``--json`` results
to stdout. Exit codes: 0 success, 1 error (one readable line), 2 usage, 130 Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from a01gym.errors import A01GymError, ConfigError
from a01gym.factory import config as factory_config
from a01gym.factory import diversity, gates, giveaway_gate, giveaways, pipeline
from a01gym.factory.cache import ScenarioCache
from a01gym.factory.split import Split

__all__ = ["AuthorKind", "Difficulty", "app"]

app = typer.Typer(help="Build and inspect scenario caches.", no_args_is_help=True)
_err = Console(stderr=True)
_T = TypeVar("_T")

AuthorKind = Literal["template", "llm"]
"""The choices of ``--author``: the factory config's ``author.kind`` (a test keeps them equal)."""

Difficulty = Literal["easy", "medium", "hard"]
"""The choices of ``--difficulty``: the factory config's difficulty bands (a test keeps them
equal)."""


@contextmanager
def _errors() -> Iterator[None]:
    """Translate errors exactly once: A01GymError → exit 1 with one line; Ctrl-C → 130."""
    try:
        yield
    except KeyboardInterrupt:
        _err.print("[yellow]interrupted[/]; the cache holds every scenario finished so far")
        raise typer.Exit(130) from None
    except A01GymError as exc:
        _err.print(f"[red]error:[/] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
        transient=False,
    )


def _stages(progress: Progress) -> pipeline.ProgressFn:
    """A build's progress callback: one bar per stage (authoring, then gating)."""
    tasks: dict[str, Any] = {}

    def report(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            label = "authoring" if stage == "author" else "gating in sandboxes"
            tasks[stage] = progress.add_task(label, total=total)
        progress.update(tasks[stage], completed=done, total=total)

    return report


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


@app.command()
def build(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Cache directory to build into (with --from-feedback: default the spec's cache).",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="Factory config (YAML or JSON); without it every field takes its default "
            "(examples/factory.yaml lists them).",
        ),
    ] = None,
    count: Annotated[
        int | None, typer.Option(help="Candidates to author (overrides config).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Run seed (overrides config).")] = None,
    author: Annotated[
        AuthorKind | None, typer.Option(help="Who writes the specs (overrides config).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Concurrent sandbox verifications (overrides config).")
    ] = None,
    from_feedback: Annotated[
        Path | None,
        typer.Option(
            "--from-feedback",
            metavar="SPEC",
            help="Build the orders of a factory job spec from `a01gym analyze --job-out` "
            "(new train scenarios for weak cells; the eval split is never touched).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Author, compile, gate and cache scenarios."""
    if from_feedback is not None:
        clashes = [
            flag
            for flag, value in (("--config", config), ("--count", count), ("--seed", seed))
            if value is not None
        ] + (["--author"] if author is not None else [])
        if clashes:
            raise typer.BadParameter(
                f"{', '.join(clashes)} do not combine with it: the spec sets what to build",
                param_hint="--from-feedback",
            )
        with _errors():
            summary = _build_from_feedback(from_feedback, out, workers)
        if summary.candidates:
            _summary_table(summary)
        if as_json:
            _emit_json(summary.model_dump() | {"yield": summary.yield_})
        return
    if out is None:
        raise typer.BadParameter("give the cache directory to build into", param_hint="--out")
    with _errors():
        overrides: dict[str, Any] = {"count": count, "seed": seed}
        if config is None:
            given = {k: v for k, v in overrides.items() if v is not None}
            cfg = factory_config.validate_config(given)
        else:
            cfg = factory_config.load_config(config, **overrides)
        data = cfg.model_dump()
        if author is not None:
            data["author"]["kind"] = author
        if workers is not None:
            data["gates"]["workers"] = workers
        cfg = factory_config.validate_config(data)
        with _progress() as progress:
            summary = asyncio.run(pipeline.build(cfg, out, progress=_stages(progress)))
        _summary_table(summary)
        if as_json:
            _emit_json(summary.model_dump() | {"yield": summary.yield_})


def _build_from_feedback(
    spec_path: Path, out: Path | None, workers: int | None
) -> pipeline.BuildSummary:
    from a01gym.feedback import jobs

    spec = jobs.load_job_spec(spec_path)
    if workers is not None:
        spec = spec.model_copy(update={"workers": workers})
    target = out or (Path(spec.cache) if spec.cache else None)
    if target is None:
        raise ConfigError("--out", f"{spec_path} names no cache", hint="pass --out CACHE_DIR")
    if not spec.orders:
        _err.print(f"{spec_path} orders nothing: every train cell is learnable or mastered")
    with _progress() as progress:
        return asyncio.run(jobs.run_job(spec, target, progress=_stages(progress)))


def _summary_table(summary: pipeline.BuildSummary) -> None:
    table = Table(
        title=f"factory build: {summary.admitted}/{summary.candidates} admitted "
        f"in {summary.duration_s:.1f}s"
    )
    table.add_column("family")
    table.add_column("admitted", justify="right")
    table.add_column("rejected", justify="right")
    table.add_column("reasons")
    for family, stats in summary.per_family.items():
        reasons = ", ".join(f"{k} ×{v}" for k, v in sorted(stats.reasons.items()))
        table.add_row(family, str(stats.admitted), str(stats.rejected), reasons or "-")
    _err.print(table)
    if (verdict := summary.giveaways) is not None:
        failed = ", ".join(f"{family} {probe}" for family, probe in verdict.failures)
        found = f"[red]{failed}[/red] far above chance, {len(verdict.removed)} removed"
        _err.print(
            f"giveaway gate ({verdict.mode}, {verdict.scenarios} scenarios): "
            f"{found if failed else 'no bug found far above chance'} (factory giveaways CACHE)"
        )


@app.command("list")
def list_entries(
    cache: Annotated[Path, typer.Argument(help="Cache directory.")],
    split: Annotated[Split | None, typer.Option(help="Only this split.")] = None,
    family: Annotated[str | None, typer.Option(help="e.g. F01")] = None,
    difficulty: Annotated[Difficulty | None, typer.Option(help="Only this band.")] = None,
    rejected: Annotated[bool, typer.Option(help="List rejected candidates instead.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """List the scenarios (or rejections) in a cache."""
    with _errors():
        store = ScenarioCache(cache)
        if rejected:
            rows = store.rejections()
            if as_json:
                _emit_json([r.model_dump() for r in rows])
                return
            table = Table(title=f"{len(rows)} rejected candidates")
            for column in ("family", "domain", "stage", "reason"):
                table.add_column(column)
            for r in rows:
                table.add_row(r.family, r.domain, r.stage, r.reason[:120])
            _err.print(table)
            return
        entries = store.entries(split=split, family=family, difficulty=difficulty)
        if as_json:
            _emit_json([e.model_dump(exclude={"validation"}) for e in entries])
            return
        table = Table(title=f"{len(entries)} scenarios in {cache}")
        table.add_column("hash", no_wrap=True, min_width=12)
        for column in ("family", "cwe", "domain", "difficulty", "split", "sites", "hint"):
            table.add_column(column, overflow="fold")
        for e in entries:
            table.add_row(
                e.hash[:12],
                e.family,
                e.cwe,
                e.domain,
                e.difficulty,
                e.split,
                ",".join(e.sites),
                str(e.hint_level),
            )
        _err.print(table)


@app.command()
def show(
    cache: Annotated[Path, typer.Argument(help="Cache directory.")],
    digest: Annotated[str, typer.Argument(metavar="HASH", help="Scenario hash or prefix (6+).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show one scenario: labels, gate results, files and tests."""
    with _errors():
        store = ScenarioCache(cache)
        entry = store.entry(digest)
        bundle = store.load(entry.hash)
        data = {
            "entry": entry.model_dump(),
            "manifest": {
                "name": bundle.manifest.name,
                "title": bundle.manifest.title,
                "actors": [a.name for a in bundle.manifest.actors],
                "visible_tests": [t.id for t in bundle.manifest.visible_tests],
            },
            "hidden": {
                "labels": bundle.hidden.labels,
                "tests": [f"{t.kind.value}: {t.id}" for t in bundle.hidden.tests],
                "reference_fix": sorted(bundle.hidden.reference_fix.files),
                "traps": sorted(bundle.hidden.traps),
            },
            "workspace": sorted(bundle.workspace),
        }
        if as_json:
            _emit_json(data)
            return
        _err.print(f"[bold]{entry.hash}[/]  {bundle.manifest.name} ({bundle.manifest.title})")
        for key in ("family", "cwe", "domain", "difficulty", "split", "sites", "author", "model"):
            _err.print(f"  {key:>8}: {getattr(entry, key)}")
        _err.print(f"  {'files':>8}: {', '.join(data['workspace'])}")
        _err.print(f"  {'fix':>8}: {', '.join(data['hidden']['reference_fix'])}")
        _err.print(f"  {'traps':>8}: {', '.join(data['hidden']['traps'])}")
        for line in data["hidden"]["tests"]:
            _err.print(f"    {line}")
        runs = entry.validation.get("runs", [])
        for run in runs:
            _err.print(
                f"  gate {run['name']:<24} score={run['score']:.3f} resolved={run['resolved']}"
            )
        for result in entry.validation.get("probes", []):
            outcome = f"score={result['score']:.3f}" if result["ran"] else result["note"]
            _err.print(f"  hack {result['hack']:<24} {outcome}")


@app.command()
def stats(
    cache: Annotated[Path, typer.Argument(help="Cache directory.")],
    split: Annotated[Split | None, typer.Option(help="Only this split.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Structural diversity: distinct file layouts, and per family the distinct shapes of the
    reference fix (names, strings and numbers abstracted away), the files it touches, and the
    fewest and most hidden exploits and the fewest guards of a scenario."""
    with _errors():
        store = ScenarioCache(cache)
        bundles = (store.load(entry.hash) for entry in store.entries(split=split))
        report = diversity.measure(bundles)
        if as_json:
            _emit_json(report.model_dump())
            return
        styles = ", ".join(f"{n} {style}" for style, n in report.styles.items())
        title = f"{report.scenarios} scenarios ({styles}), {report.file_layouts} file layouts"
        table = Table(title=title)
        columns = ("family", "scenarios", "fix shapes", "fixed-file sets", "commonest")
        for column in (*columns, "exploits", "guards (fewest)"):
            table.add_column(column)
        for family, row in report.families.items():
            cells = (row.scenarios, row.fix_shapes, row.fix_file_sets)
            exploits = f"{row.exploits_min}-{row.exploits_max}"
            fixed = ", ".join(row.top_fix_files)
            table.add_row(family, *map(str, cells), fixed, exploits, str(row.guards_min))
        _err.print(table)


@app.command("giveaways")
def giveaway_report(
    cache: Annotated[Path, typer.Argument(help="Cache directory.")],
    split: Annotated[Split | None, typer.Option(help="Only this split.")] = None,
    strict: Annotated[bool, typer.Option(help="Exit 1 on a bug found far above chance.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Shortcut finders that never read the policy, per family: how often each points at the
    file the reference fix changes, against chance, and which find a family's bug far above it
    (needs ~10 scenarios a family to say; a few hundred scenarios take ~1 minute)."""
    with _errors():
        store = ScenarioCache(cache)
        entries = store.entries(split=split)
        rows = giveaway_gate.report([store.load(entry.hash) for entry in entries])
        failed = giveaway_gate.failures(rows)
        if as_json:
            _emit_json({"families": [r.model_dump() for r in rows], "failures": failed})
        else:
            title = "giveaway probes: rate/chance=ratio (! far above), base: same files, no bug"
            table = Table("family", "scenarios", *giveaways.PROBES, title=title)
            for row in rows:
                cells = (p.cell() for p in row.probes.values())
                table.add_row(row.family, str(row.scenarios), *cells)
            _err.print(table)
        if failed and strict:
            listed = ", ".join(f"{family} {probe}" for family, probe in failed)
            _err.print(f"[red]error:[/red] far above chance: {listed}")
            raise typer.Exit(1)


@app.command()
def validate(
    cache: Annotated[Path, typer.Argument(help="Cache directory.")],
    run_gates: Annotated[
        bool, typer.Option("--gates/--no-gates", help="Also re-run the gold gates.")
    ] = True,
    workers: Annotated[int, typer.Option(help="Concurrent sandbox verifications.")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print problems as JSON.")] = False,
) -> None:
    """Re-check every scenario's hash (and, by default, its gates). Exit 1 on any problem."""
    with _errors():
        store = ScenarioCache(cache)
        entries = store.entries()
        problems: dict[str, str] = {}
        bundles = []
        for entry in entries:
            try:
                bundles.append(store.load(entry.hash, verify=True))
            except A01GymError as exc:
                problems[entry.hash] = f"hash: {exc}"
        if run_gates and bundles:
            with _progress() as progress:
                task = progress.add_task("re-gating", total=len(bundles))
                reports = asyncio.run(_regate(bundles, workers, lambda: progress.advance(task)))
            for bundle, report in zip(bundles, reports, strict=True):
                if not report.admitted:
                    problems[bundle.manifest.content_hash] = f"gates: {report.reason}"
        if as_json:
            _emit_json({"checked": len(entries), "problems": problems})
        for digest, problem in sorted(problems.items()):
            _err.print(f"[red]{digest[:12]}[/] {problem[:300]}")
        _err.print(f"{len(entries)} scenarios checked, {len(problems)} problems")
        if problems:
            raise typer.Exit(1)


async def _regate(bundles: list[Any], workers: int, tick: Callable[[], None]) -> list[Any]:
    from a01gym.sandbox.host.local import LocalBackend

    async with LocalBackend(pool_size=workers + 2) as backend:
        return await gates.gate_many(
            backend, bundles, workers=workers, seed=7, on_done=lambda *_: tick()
        )
