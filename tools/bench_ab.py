"""A/B a benchmark: this tree's bench script against the product code of two commits, interleaved.

A figure measured on another day, or on another machine of the same kind (they differ ~3x in
speed), says nothing about whether a change made a01gym cheaper. An A/B runs the *same* bench
script (this tree's ``bench/``) in alternating rounds, A (``--base``: another commit's
``src``) then B (this tree's ``src``), within one sitting, so both meet the same machine and
load. The base commit is checked out once as a detached git worktree under
``~/.cache/a01gym/ab/<sha>`` and imported first through ``PYTHONPATH``, which the gateway, the
zygote and every sandbox process inherit; the bench's factory-built cache is keyed by the
imported code (``bench/workload.py``), so each side serves scenarios its own factory built.

Prints one JSON document (every round's metrics of ``--key`` and its whole report, the medians
per side, and B ÷ A) and one summary line; ``--json-out`` also writes it.

    python tools/bench_ab.py --base a349390 --rounds 2 \\
        --key server_cpu_units_per_reset -- bench/reset_cpu.py --sessions 128
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _worktree(rev: str) -> Path:
    """A detached checkout of ``rev`` (made once, then reused)."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "a01gym" / "ab"
    tree = base / sha
    if not (tree / "src" / "a01gym").is_dir():
        base.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), sha],
            check=True,
            capture_output=True,
        )
    return tree


def _run(bench: list[str], src: Path, out: Path) -> dict[str, Any]:
    """One bench run importing ``src`` first; its report (``bench/report.py``)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, *bench, "--json-out", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
    if done.returncode not in (0, 1) or not out.exists():  # 1: a target missed, still measured
        raise SystemExit(f"{' '.join(bench)} with {src} failed (exit {done.returncode})")
    return json.loads(out.read_text())


def _median(rounds: list[dict[str, Any]], side: str, key: str) -> float | None:
    """The median of ``key`` over one side's rounds (None if no round reported it)."""
    values = [r[key] for r in rounds if r["side"] == side and r[key] is not None]
    return round(statistics.median(values), 4) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare with (A)")
    parser.add_argument("--rounds", type=int, default=2, help="A then B, this many times")
    parser.add_argument("--key", action="append", required=True, help="metric to compare")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- bench/X.py [its options]")
    args = parser.parse_args()
    bench = [a for a in args.bench if a != "--"]
    if not bench:
        parser.error("name the bench after --, e.g. -- bench/reset_cpu.py --sessions 128")
    sides = {"A": _worktree(args.base) / "src", "B": ROOT / "src"}
    began = time.perf_counter()
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="a01gym-ab-") as scratch:
        for index in range(args.rounds):
            for side, src in sides.items():
                report = _run(bench, src, Path(scratch) / f"{side}{index}.json")
                rounds.append(
                    {
                        "side": side,
                        "round": index,
                        "load_avg_1m": report["load_avg_1m"],
                        **{key: report["metrics"].get(key) for key in args.key},
                        "report": report,  # the whole report, for what --key left out
                    }
                )
    result: dict[str, Any] = {"base": args.base, "bench": bench, "rounds": rounds}
    for key in args.key:
        medians = {side: _median(rounds, side, key) for side in sides}
        ratio = (
            round(medians["B"] / medians["A"], 3)
            if medians["A"] and medians["B"] is not None
            else None
        )
        result[key] = {**medians, "b_over_a": ratio}
    result["seconds"] = round(time.perf_counter() - began, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    summary = ", ".join(
        f"{k} A {result[k]['A']} B {result[k]['B']} (B/A {result[k]['b_over_a']})" for k in args.key
    )
    print(f"bench_ab {' '.join(bench)} vs {args.base}: {summary}", file=sys.stderr)


if __name__ == "__main__":
    main()
