"""Benchmark how fast the ``a01gym`` script fails when nothing can work, and how fast it starts.

Measures, each over ``--runs`` runs of the installed console script in a subprocess:

* ``version_s``: ``a01gym version`` (import cost every command pays);
* ``eval_unreachable_gateway_s``: ``a01gym eval --url http://127.0.0.1:9`` until it exits 1;
* ``eval_unreachable_model_s``: ``a01gym eval --agent openai --base-url http://127.0.0.1:9/v1``
  on the test fixture until it exits 1 (before any sandbox starts);
* ``eval_bad_value_s``: ``a01gym eval --episodes 0``.

Wall-clock medians and maxima, plus CPU seconds (user + system of the child) medians, which a
busy shared host does not inflate. Target (issue 15): every failure in seconds, not minutes:
median wall ≤ 5 s on an idle machine; the CPU medians show the cost itself.

    python bench/cli.py --runs 5 --json-out bench/results/cli.json
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import report

SCRIPT = Path(sys.executable).with_name("a01gym")
FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "idor_notes"
CASES: dict[str, tuple[list[str], int]] = {
    "version": (["version"], 0),
    "eval_unreachable_gateway": (["eval", "--url", "http://127.0.0.1:9"], 1),
    "eval_unreachable_model": (
        [
            "eval",
            "--agent",
            "openai",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--cache",
            str(FIXTURE),
            "--split",
            "train",
        ],
        1,
    ),
    "eval_bad_value": (["eval", "--episodes", "0", "--cache", str(FIXTURE)], 1),
}
TARGETS = {
    "eval_unreachable_gateway_s": ("<=", 5.0),
    "eval_unreachable_model_s": ("<=", 5.0),
    "eval_bad_value_s": ("<=", 5.0),
}


def _run(args: list[str], expected: int, cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=600
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expected or "Traceback" in done.stderr:
        raise SystemExit(f"a01gym {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json-out", type=Path)
    options = parser.parse_args()
    began = time.perf_counter()
    metrics: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cwd:
        for name, (args, expected) in CASES.items():
            samples = [_run(args, expected, cwd) for _ in range(options.runs)]
            walls = [w for w, _ in samples]
            metrics[f"{name}_s"] = round(statistics.median(walls), 3)
            metrics[f"{name}_max_s"] = round(max(walls), 3)
            metrics[f"{name}_cpu_s"] = round(statistics.median(c for _, c in samples), 3)
    report.emit(
        "cli",
        metrics,
        TARGETS,
        quick=options.runs < 5,
        began=began,
        json_out=options.json_out,
    )


if __name__ == "__main__":
    main()
