"""Shared output of the benchmarks: one JSON document on stdout (and ``--json-out``), and one
human-readable summary line on stderr, with every metric checked against its target."""

from __future__ import annotations

import json
import operator
import os
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["Targets", "emit"]

Targets = dict[str, tuple[str, float]]
"""metric name -> (``"<="``, ``">="``, ``"<"``, ``">"`` or ``"=="``, bound)."""

_COMPARE = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
}


def emit(
    name: str,
    metrics: dict[str, Any],
    targets: Targets,
    *,
    quick: bool,
    began: float,
    json_out: Path | None,
) -> dict[str, Any]:
    """Print (and maybe write) the report; returns it."""
    verdicts = {
        metric: _COMPARE[op](metrics[metric], bound) for metric, (op, bound) in targets.items()
    }
    report = {
        "benchmark": name,
        "quick": quick,
        "seconds": round(time.perf_counter() - began, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "metrics": metrics,
        "targets": {metric: f"{op} {bound}" for metric, (op, bound) in targets.items()},
        "meets_targets": verdicts,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(text + "\n")
    summary = ", ".join(f"{m}={metrics[m]}{'' if verdicts[m] else ' (MISS)'}" for m in targets)
    print(
        f"{name} bench: {summary}; {sum(verdicts.values())}/{len(verdicts)} targets met "
        f"(load {report['load_avg_1m']})",
        file=sys.stderr,
    )
    return report
