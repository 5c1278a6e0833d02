"""Writes a run's report: the HTML page of ``a01gym report RUN_DIR``.

:func:`write_html_report` reads a run directory (:mod:`a01gym.training.rundata`), draws its
charts (:mod:`a01gym.training.charts`) and lays out one static page
(:mod:`a01gym.training.htmlpage`) with training curves, base vs trained per family, the reward
breakdown and a few transcripts. :func:`format_mean` and :func:`format_rate` are how every
report and summary table shows a mean or a rate. The demo's files (a Markdown summary, a plot,
the raw JSON, and this page over the demo's agents) are :mod:`a01gym.training.demoreport`.

Reads only what clients saw (eval records, the gateway's public episode logs, rollouts), so a
report never contains hidden test definitions.
"""

from __future__ import annotations

import dataclasses
import datetime
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from a01gym.training import charts, expertreport, htmlpage, rundata

__all__ = ["format_mean", "format_rate", "write_html_report"]

_SECTIONS = (
    ("training", "Training"),
    ("evaluation", "Evaluation"),
    ("breakdown", "Reward breakdown"),
    ("expert", "Expert"),
    ("transcripts", "Transcripts"),
    ("config", "Configuration"),
)
_PENALTIES = ("invalid_actions", "broken_app", "removed_routes", "steps")


def format_mean(value: float | None, ci: Sequence[float] | None = None) -> str:
    """``0.412 [0.25–0.58]``, or ``–`` when no episode completed."""
    if value is None:
        return "–"
    return f"{value:.3f}" + (f" [{ci[0]:.2f}–{ci[1]:.2f}]" if ci else "")


def format_rate(value: float | None, ci: Sequence[float] | None = None) -> str:
    """``42% [25%–58%]``, or ``–`` when no episode completed."""
    if value is None:
        return "–"
    return f"{value:.0%}" + (f" [{ci[0]:.0%}–{ci[1]:.0%}]" if ci else "")


@dataclasses.dataclass(frozen=True)
class _Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _pct(value: float) -> str:
    return f"{value:.0%}"


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


# -- training --------------------------------------------------------------------------------
def _training(run: rundata.RunData, out: Path) -> dict[str, Any] | None:
    metrics = sorted(run.metrics, key=lambda row: rundata.as_float(row.get("step")))
    if not metrics:
        return None
    image = charts.training_curves(out / "training.png", metrics)
    first, last = metrics[0], metrics[-1]
    best = max(metrics, key=lambda row: rundata.as_float(row.get("reward_mean")))
    step_s = sum(rundata.as_float(r.get("step_s")) for r in metrics) or 1.0
    generation = sum(rundata.as_float(r.get("generation_s")) for r in metrics) / step_s
    env = sum(rundata.as_float(r.get("env_s")) for r in metrics) / step_s
    keys = ("reward_mean", "security_rate", "regression_rate", "resolved_rate")
    keys += ("invalid_action_rate", "episode_length_mean")
    summary = _Table(
        ["metric", f"first (step {first.get('step')})", f"last (step {last.get('step')})"],
        [[key, _fmt(first.get(key)), _fmt(last.get(key))] for key in keys],
    )
    best_text = f"{rundata.as_float(best.get('reward_mean')):.3f} (step {best.get('step')})"
    rate = _mean([rundata.as_float(r.get("rollouts_per_s")) for r in metrics])
    failed = int(sum(rundata.as_float(r.get("failed_episodes")) for r in metrics))
    split = f"{generation:.0%} / {env:.0%} / {max(1 - generation - env, 0):.0%}"
    summary.rows.extend(
        [
            ["best reward_mean", "", best_text],
            ["rollouts per second (mean)", "", f"{rate:.2f}"],
            ["failed episodes (all steps)", "", str(failed)],
            ["step time: generation / environment / other", "", split],
        ]
    )
    per_family = last.get("per_family") if isinstance(last.get("per_family"), dict) else {}
    families = _Table(
        ["family", "rollouts", "reward mean", "security rate", "regression rate"],
        [
            [
                str(family),
                _fmt(values.get("n")),
                _fmt(values.get("reward_mean")),
                _fmt(values.get("security_rate")),
                _fmt(values.get("regression_rate")),
            ]
            for family, values in sorted(per_family.items())
            if isinstance(values, dict)
        ],
    )
    return {"image": image.name, "summary": summary, "families": families if per_family else None}


# -- evaluation ------------------------------------------------------------------------------
def _graded(label: rundata.EvalLabel) -> list[dict[str, Any]]:
    return [r["breakdown"] for r in label.episodes if isinstance(r.get("breakdown"), dict)]


def _evaluation(run: rundata.RunData, out: Path) -> dict[str, Any] | None:
    labels = [label for label in run.labels if label.episodes]
    if not labels:
        return None
    header = ["label", "episodes", "errors", "mean reward", "security pass"]
    header += ["regression pass", "resolved", "mean steps"]
    overall = _Table(header, [])
    per_family: dict[str, dict[str, float]] = {}
    for label in labels:
        rows = label.episodes
        n = len(rows)
        overall.rows.append(
            [
                label.name,
                str(n),
                str(sum(bool(r.get("error")) for r in rows)),
                f"{_mean([rundata.as_float(r.get('reward')) for r in rows]):.3f}",
                _pct(sum(rundata.as_float(r.get("security")) == 1.0 for r in rows) / n),
                _pct(sum(rundata.as_float(r.get("regression")) == 1.0 for r in rows) / n),
                _pct(sum(bool(r.get("resolved")) for r in rows) / n),
                f"{_mean([rundata.as_float(r.get('steps')) for r in rows]):.1f}",
            ]
        )
        families = sorted({str(r.get("family", "unknown")) for r in rows})
        per_family[label.name] = {
            f: _mean(
                [rundata.as_float(r.get("reward")) for r in rows if r.get("family", "unknown") == f]
            )
            for f in families
        }
    image = charts.family_bars(out / "families.png", per_family)
    all_families = sorted({f for values in per_family.values() for f in values})
    families_table = _Table(
        ["family", *per_family],
        [[f, *(_fmt(values.get(f)) for values in per_family.values())] for f in all_families],
    )
    return {"image": image.name, "overall": overall, "families": families_table}


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        return {prefix or "value": value}
    flat: dict[str, Any] = {}
    for key, inner in value.items():
        flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _comparison(comparison: Mapping[str, Any] | None) -> list[_Table]:
    """Each part of ``comparison.json`` as a table, whatever its nesting."""
    if not comparison:
        return []
    tables = []
    labels = comparison.get("labels")
    for part in ("difference", "overall", "per_family"):
        value = comparison.get(part)
        if not isinstance(value, dict):
            continue
        if all(not isinstance(v, dict) for v in value.values()):
            rows = {part: value}
        else:
            rows = {str(k): v for k, v in value.items()}
        flat = {key: _flatten(inner) for key, inner in rows.items()}
        columns = list(dict.fromkeys(c for inner in flat.values() for c in inner))
        caption = part.replace("_", " ")
        if part == "difference" and isinstance(labels, list) and len(labels) == 2:
            caption = f"difference of mean reward, {labels[1]} minus {labels[0]}"
        tables.append(
            _Table(
                ["", *columns],
                [[key, *(_fmt(inner.get(c)) for c in columns)] for key, inner in flat.items()],
                caption=caption,
            )
        )
    return tables


def _breakdown(run: rundata.RunData, out: Path) -> dict[str, Any] | None:
    means: dict[str, dict[str, float]] = {}
    header = ["label", "graded", "security", "regression", "score"]
    header += [f"penalty: {p.replace('_', ' ')}" for p in _PENALTIES]
    header += ["reward", "exploit tests blocked", "regression tests passing"]
    table = _Table(header, [])
    for label in run.labels:
        graded = _graded(label)
        if not graded:
            continue

        def mean(
            get: Callable[[dict[str, Any]], Any], rows: list[dict[str, Any]] = graded
        ) -> float:
            return _mean([rundata.as_float(get(b)) for b in rows])

        penalties = {p: mean(lambda b, p=p: (b.get("penalties") or {}).get(p)) for p in _PENALTIES}
        tests = [t for b in graded for t in b.get("tests") or [] if isinstance(t, dict)]
        kinds = {
            kind: [t for t in tests if t.get("kind") == kind] for kind in ("exploit", "regression")
        }
        means[label.name] = {
            "security": mean(lambda b: b.get("security")),
            "regression": mean(lambda b: b.get("regression")),
            "score": mean(lambda b: b.get("score")),
            "penalties": sum(penalties.values()),
            "reward": mean(lambda b: b.get("reward")),
        }
        table.rows.append(
            [
                label.name,
                str(len(graded)),
                *(f"{means[label.name][k]:.3f}" for k in ("security", "regression", "score")),
                *(f"{penalties[p]:.3f}" for p in _PENALTIES),
                f"{means[label.name]['reward']:.3f}",
                *(
                    _pct(sum(bool(t.get("passed")) for t in found) / len(found)) if found else "–"
                    for found in kinds.values()
                ),
            ]
        )
    if not means:
        return None
    image = charts.breakdown_bars(out / "breakdown.png", means)
    return {"image": image.name, "table": table}


# -- transcripts -----------------------------------------------------------------------------
def _diff_lines(diff: str | None) -> list[tuple[str, str]] | None:
    if diff is None:
        return None
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [
        ("file" if line.startswith(("+++", "---")) else kinds.get(line[:1], "context"), line)
        for line in diff.splitlines()
    ]


def _view(title: str, meta: Mapping[str, Any], transcript: rundata.Transcript) -> dict[str, Any]:
    return {
        "title": title,
        "meta": ", ".join(f"{k} {_fmt(v)}" for k, v in meta.items() if v not in (None, "")),
        "briefing": transcript.briefing,
        "steps": transcript.steps,
        "diff": _diff_lines(transcript.diff),
    }


def _pick(rows: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The best and the worst episodes first, then the next best: a spread, not a sample."""
    ranked = sorted(
        rows, key=lambda r: (-rundata.as_float(r.get("reward")), rundata.as_float(r.get("seed")))
    )
    picked: list[dict[str, Any]] = []
    while ranked and len(picked) < count:
        picked.append(ranked.pop(0) if len(picked) % 2 == 0 else ranked.pop())
    return picked


def _episode_meta(row: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("seed", "family", "difficulty", "reward", "security", "regression", "steps")
    meta = {key: row.get(key) for key in keys}
    meta["scenario"] = str(row.get("scenario") or "")[:12]
    meta["error"] = row.get("error")
    return meta


def _transcripts(run: rundata.RunData, per_label: int) -> tuple[list[dict[str, Any]], str | None]:
    views: list[dict[str, Any]] = []
    missing = 0
    taken: set[Path] = set()
    for label in run.labels:
        for row in _pick(label.episodes, per_label):
            directory = rundata.find_episode_dir(run.root, row, taken=taken)
            diff = rundata.episode_transcript(directory).diff if directory else None
            if isinstance(row.get("messages"), list):
                transcript = rundata.message_transcript(
                    row["messages"], diff=diff, source=f"{label.name} chat"
                )
            elif directory is not None:
                transcript = rundata.episode_transcript(directory)
            else:
                missing += 1
                continue
            title = f"{label.name}: seed {row.get('seed')}, reward {_fmt(row.get('reward'))}"
            views.append(_view(title, _episode_meta(row), transcript))
    if run.rollouts:
        last = max(rundata.as_float(r.get("step")) for r in run.rollouts)
        rows = [r for r in run.rollouts if rundata.as_float(r.get("step")) == last]
        for row in _pick(rows, per_label):
            if not isinstance(row.get("messages"), list):
                continue
            directory = rundata.find_episode_dir(run.root, row, taken=taken)
            diff = rundata.episode_transcript(directory).diff if directory else None
            transcript = rundata.message_transcript(row["messages"], diff=diff, source="rollout")
            title = f"GRPO step {row.get('step')} rollout: seed {row.get('seed')}, reward " + _fmt(
                row.get("reward")
            )
            meta = {**_episode_meta(row), "actions": row.get("actions")}
            meta["failure"] = row.get("failure")
            views.append(_view(title, meta, transcript))
    note = (
        f"{missing} chosen episode(s) had neither chat messages nor a gateway log to show."
        if missing
        else None
    )
    return views, note


# -- the page --------------------------------------------------------------------------------
def write_html_report(
    run_dir: Path, out: Path | None = None, *, transcripts_per_label: int = 2
) -> Path:
    """Write ``index.html`` and its PNGs for the run in ``run_dir``.

    Args:
        run_dir: a training or eval run directory; any part of it may be missing.
        out: where the page goes; ``run_dir/report`` by default.
        transcripts_per_label: episodes shown per eval label (and rollouts of the last step).

    Returns:
        The path of ``index.html``.

    Raises:
        FileNotFoundError: when ``run_dir`` is not a directory.
    """
    run = rundata.load_run(run_dir)
    out = out if out is not None else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    views, missing = _transcripts(run, transcripts_per_label)
    context = {
        "title": run_dir.resolve().name,
        "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "sections": _SECTIONS,
        "notes": run.notes,
        "training": _training(run, out),
        "evaluation": _evaluation(run, out),
        "comparison": _comparison(run.comparison),
        "breakdown": _breakdown(run, out),
        "expert": expertreport.expert_section(run, out),
        "transcripts": views,
        "missing_transcripts": missing,
        "config": run.config_text,
    }
    page = out / "index.html"
    page.write_text(htmlpage.render(context), encoding="utf-8")
    return page
