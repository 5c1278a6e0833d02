"""Shared output of the benchmarks: one JSON document on stdout (and ``--json-out``), and one
human-readable summary line on stderr, with every metric checked against its target.

Every report carries the machine's 1-minute load average and ``calibration_ms``, the CPU time
of ``bench/calibration.py``'s fixed workload in the same run, so absolute figures can be read
against the machine that produced them."""

from __future__ import annotations

import json
import operator
import os
import sys
import time
from pathlib import Path
from typing import Any

import calibration

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
    calibration_ms: float | None = None,
) -> dict[str, Any]:
    """Print (and maybe write) the report; returns it.

    Args:
        calibration_ms: the bench's own :func:`calibration.measure`, when it used one in its
            metrics; measured here otherwise.
    """
    verdicts = {
        metric: _COMPARE[op](metrics[metric], bound) for metric, (op, bound) in targets.items()
    }
    report = {
        "benchmark": name,
        "quick": quick,
        "seconds": round(time.perf_counter() - began, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "calibration_ms": calibration_ms or calibration.measure(),
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
        f"(load {report['load_avg_1m']}, calibration {report['calibration_ms']} ms)",
        file=sys.stderr,
    )
    return report
