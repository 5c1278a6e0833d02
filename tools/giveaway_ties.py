"""The probes that need no population, rated over many builds: expected hits per family.

    .venv/bin/python tools/giveaway_ties.py --seeds 28-35 --json-out ties.json

One 300-draft build has 14-15 scenarios a family, so a family's rate there is coarse. The
probes that read one app alone (``sibling_asymmetry``, ``unused_helper``, ``policy_keywords``,
``largest_file``; not ``nearest_diff``, which compares every app with every other) are cheap
to run over many builds: this rates them over the template drafts of every seed given
(compiled, never gated), in expected hits as :func:`a01gym.factory.giveaway_gate.report`
counts them, against chance (a random Python file), and gives how often a build of
``--count`` drafts would fail the gate for each family, at its expected rate.
docs/families.md, "How much of a pass is luck", holds a run.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from a01gym.factory import author, compiler, config, giveaway_gate, giveaways

PROBES = ("sibling_asymmetry", "unused_helper", "policy_keywords", "largest_file")


def _fails(rate: float, chance: float, trials: int) -> float:
    """P(a build of ``trials`` scenarios fails the gate), each hit a Bernoulli(``rate``) draw."""
    need = next(
        (
            k
            for k in range(trials + 1)
            if giveaway_gate.binomial_tail(k, trials, giveaway_gate.GATE_FACTOR * chance)
            < giveaway_gate.GATE_ALPHA
        ),
        None,
    )
    if need is None:
        return 0.0
    return giveaway_gate.binomial_tail(need, trials, rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="28-35", help="first-last, inclusive")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    hits: dict[tuple[str, str], float] = collections.Counter()
    chance: dict[str, float] = collections.Counter()
    scenarios: dict[str, int] = collections.Counter()
    for seed in seeds:
        for request in author.plan(config.FactoryConfig(count=args.count, seed=seed)):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            family = bundle.hidden.labels["family"]
            files = giveaways.python_files(bundle)
            fixed = set(bundle.hidden.reference_fix.files)
            scenarios[family] += 1
            chance[family] += len(fixed & set(files)) / len(files) if files else 0.0
            for name in PROBES:
                pointer = giveaways.PROBES[name](bundle, [files], 0)
                hits[family, name] += giveaway_gate.expected_hit(
                    pointer, lambda c, fixed=fixed: c.path in fixed
                )
    per_build = round(args.count / len(scenarios))
    rows: dict[str, dict[str, object]] = {}
    for family, n in sorted(scenarios.items()):
        odds = chance[family] / n
        rows[family] = {"scenarios": n, "chance": round(odds, 3)}
        for name in PROBES:
            rate = hits[family, name] / n
            rows[family][name] = {
                "expected_rate": round(rate, 3),
                "ratio": round(rate / odds, 2) if odds else 0.0,
                "build_fails": round(_fails(rate, odds, per_build), 2),
            }
    print(json.dumps(rows, indent=1))
    above = sorted(
        f"{family} {name}"
        for family, row in rows.items()
        for name in PROBES
        if row[name]["ratio"] > giveaway_gate.GATE_FACTOR  # type: ignore[index]
    )
    print(
        f"{len(seeds)} builds of {args.count}: {len(above)} family-probe pairs above "
        f"{giveaway_gate.GATE_FACTOR:g}x chance in expectation ({', '.join(above) or 'none'})"
    )
    if args.json_out:
        out = {"seeds": args.seeds, "count": args.count, "families": rows}
        args.json_out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
