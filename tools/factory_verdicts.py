"""Print a factory cache's gate verdicts as canonical JSON, timings left out.

Two builds of one config and seed must print the same text, whatever made one of them faster
(how runs share sandboxes, the worker count, the order candidates finish in): the admitted
scenarios, every run's score and per-world verdicts, every G5 probe's result, and every
rejection with its reason. Compare a build before and after a change to the factory's
scheduling with::

    .venv/bin/python tools/factory_verdicts.py CACHE_BEFORE > before.json
    .venv/bin/python tools/factory_verdicts.py CACHE_AFTER > after.json
    diff before.json after.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from a01gym.scenario.cache import ScenarioCache

TIMINGS = frozenset({"duration_ms", "created_at"})
"""Fields that measure how long something took or when: they differ between any two builds."""


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def verdicts(cache: Path) -> dict[str, Any]:
    """The cache's verdicts: validation per admitted hash, rejections sorted."""
    index = ScenarioCache(cache)
    rejections = [
        r.model_dump(include={"spec_sha256", "family", "domain", "stage", "reason"})
        for r in index.rejections()
    ]
    return {
        "admitted": {e.hash: _without_timings(e.validation) for e in index.entries()},
        "rejected": sorted(rejections, key=lambda r: json.dumps(r, sort_keys=True)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="a factory cache directory")
    args = parser.parse_args()
    if not (args.cache / "index.sqlite").exists():
        raise SystemExit(f"{args.cache} has no index.sqlite: pass the directory a build wrote")
    print(json.dumps(verdicts(args.cache), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
