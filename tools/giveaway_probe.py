"""Run the giveaway probes (:mod:`a01gym.factory.giveaways`) over compiled template drafts.

    .venv/bin/python tools/giveaway_probe.py --count 300 --json-out giveaways.json

Drafts are compiled, never gated: the code an agent reads is fixed at compile time. Prints one
line per family: each probe's hit rate, chance, and their ratio (the issue's target: within 2×),
marked ``!`` where the hits are far above that (``giveaway_gate.failures``), and the probe's base
(how often it names the same files in other families' apps), marked ``*`` where the hits are
far above the base too (the bug itself draws the probe); then the failures.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from a01gym.factory import author, compiler, config, giveaway_gate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    cfg = config.FactoryConfig(count=args.count, seed=args.seed)
    bundles = [compiler.compile_bundle(author.TemplateAuthor().draft(r)) for r in author.plan(cfg)]
    rows = giveaway_gate.report(bundles)
    for row in rows:
        cells = "  ".join(f"{name} {p.cell()}" for name, p in row.probes.items())
        print(f"{row.family:4} n={row.scenarios:3}  {cells}")
    failed = giveaway_gate.failures(rows)
    print(
        f"far above {giveaway_gate.GATE_FACTOR:g}x chance "
        f"(p < {giveaway_gate.GATE_ALPHA:g}, marked !): "
        + (", ".join(f"{family} {probe}" for family, probe in failed) or "none")
    )
    if args.json_out:
        args.json_out.write_text(json.dumps([r.model_dump() for r in rows], indent=1) + "\n")


if __name__ == "__main__":
    main()
