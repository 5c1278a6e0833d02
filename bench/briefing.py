"""Measure the first observation an agent reads, over every scenario of a built cache.

For each scenario it renders the reset observation exactly as the environment sends it
(:func:`a01gym.env.briefing.render`) and reports, in bytes (UTF-8):

* ``output_bytes_p50`` / ``_p99`` / ``_max``: the text for the LLM (``output``), which is what
  costs context on every episode;
* ``wire_bytes_p50``: the whole reset observation as JSON (``output``, ``result`` and the
  ``metadata.task`` copy that openenv-core 0.3's MCP client needs).

Target (issue 15): the median ``output`` under 4.5 KB, from 5.4–5.8 KB when the policy and
actors were printed twice. Needs no sandbox: the first observation is pure text.

    python bench/briefing.py --cache .cache/demo-scenarios
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import report
from a01gym.env import briefing, models
from a01gym.factory.cache import ScenarioCache

TARGETS = {"output_bytes_p50": ("<=", 4500)}


def _p99(values: list[int]) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path(".cache/demo-scenarios"))
    parser.add_argument("--quick", action="store_true", help="accepted for `make bench`")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    cache = ScenarioCache(args.cache)
    entries = cache.entries()
    if not entries:
        raise SystemExit(f"no scenarios in {args.cache}; build one with `a01gym demo` first")
    outputs, wires = [], []
    for entry in entries:
        text, result = briefing.render(cache.load(entry.hash))
        observation = models.A01Observation(
            output=text,
            result=result,
            phase=models.Phase.EXPLORE,
            steps_left=1,
            metadata={"task": text},
        )
        outputs.append(len(text.encode()))
        wires.append(len(json.dumps(observation.model_dump(mode="json")).encode()))
    metrics = {
        "scenarios": len(entries),
        "output_bytes_p50": int(statistics.median(outputs)),
        "output_bytes_p99": _p99(outputs),
        "output_bytes_max": max(outputs),
        "wire_bytes_p50": int(statistics.median(wires)),
    }
    report.emit("briefing", metrics, TARGETS, quick=args.quick, began=began, json_out=args.json_out)


if __name__ == "__main__":
    main()
