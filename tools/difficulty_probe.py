"""Does the difficulty label match the work? The score against the reference fix's size.

    .venv/bin/python tools/difficulty_probe.py --count 300 --json-out difficulty.json

The score (:mod:`a01gym.factory.difficulty`) is a weighted sum of features measured on the
compiled scenario (sites, the fix's files, where it lands, whether the admin-guard style moves
it, decoys, hint level), its weights set by hand (issue 28, item 5). This measures, over compiled
template drafts (no sandbox: the fix is fixed at compile time), what the fix asks of an agent:
files it touches, hunks, changed lines; and prints per band their medians, the share of
``hard`` scenarios fixed in at most two lines, and Spearman's rank correlation of the score with
each measure. It does not calibrate anything: that needs success rates of an agent that
sometimes fails, which no model runnable here provides (README, real models).

Spearman's correlation is written out (``spearman``, 15 lines, tested against hand-computed
values) rather than taken from ``scipy.stats.spearmanr``: scipy is not among our dependencies,
and a ~35 MB wheel for one report line is not worth it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
from pathlib import Path

from a01gym.factory import author, compiler, config

MEASURES = ("files", "hunks", "lines", "sites")


def fix_size(before: dict[str, bytes], after: dict[str, str | None]) -> tuple[int, int]:
    """(hunks, changed lines) of the reference fix: a hunk is one run of changed lines (a file
    the fix deletes is ``None``, as in ``fix_shape`` of factory/diversity.py)."""
    hunks = lines = 0
    for path, text in after.items():
        old = before.get(path, b"").decode().splitlines()
        matcher = difflib.SequenceMatcher(None, old, (text or "").splitlines(), autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                hunks += 1
                lines += max(i2 - i1, j2 - j1)
    return hunks, lines


def _ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):  # ties share their mean rank
            ranks[order[k]] = (start + end) / 2
        start = end + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (0.0 when either side is constant)."""
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return round(cov / var, 3) if var else 0.0


def measure(count: int, seed: int) -> dict[str, object]:
    rows = []
    for request in author.plan(config.FactoryConfig(count=count, seed=seed)):
        spec = author.TemplateAuthor().draft(request)
        bundle = compiler.compile_bundle(spec)
        fix = dict(bundle.hidden.reference_fix.files)
        hunks, lines = fix_size(dict(bundle.workspace), fix)
        labels = bundle.hidden.labels
        rows.append(
            {
                "family": spec.bug.family,
                "drafted": request.band,
                "score": float(labels["difficulty_score"]),
                "band": labels["difficulty"],
                "files": len(fix),
                "hunks": hunks,
                "lines": lines,
                "sites": len(spec.bug.sites),
            }
        )
    bands = {}
    for band in ("easy", "medium", "hard"):
        members = [r for r in rows if r["band"] == band]
        bands[band] = {
            "scenarios": len(members),
            **{m: statistics.median(r[m] for r in members) if members else None for m in MEASURES},
        }
    hard = [r for r in rows if r["band"] == "hard"]
    scores = [r["score"] for r in rows]
    return {
        "count": count,
        "seed": seed,
        "bands": bands,
        "hard_fixed_in_two_lines": sum(r["lines"] <= 2 for r in hard),
        "hard": len(hard),
        # the weights keep every draft asked for as easy labelled easy (factory/difficulty.py)
        "easy_drafts_labelled_easy": [
            sum(r["band"] == "easy" for r in rows if r["drafted"] == "easy"),
            sum(r["drafted"] == "easy" for r in rows),
        ],
        "spearman": {m: spearman(scores, [r[m] for r in rows]) for m in MEASURES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    result = measure(args.count, args.seed)
    print(json.dumps(result, indent=1))
    rho = result["spearman"]
    print(
        f"difficulty vs fix: rank correlation lines {rho['lines']}, hunks {rho['hunks']}, "
        f"files {rho['files']}, sites {rho['sites']}; {result['hard_fixed_in_two_lines']} of "
        f"{result['hard']} hard scenarios are fixed in at most two lines"
    )
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
