"""Would a change to the apps' structure bring the one-app probes within 2x chance? Two what-ifs.

    .venv/bin/python tools/giveaway_whatif.py --seeds 28-29 --json-out whatif.json

Issue 28 asks every probe to find every family's bug at most twice as often as chance (a file
drawn at random). Two probes stay far above it in some families (docs/families.md, "How much
of a pass is luck"): ``sibling_asymmetry`` in F02, F03 and F04, whose bug *is* a handler
without the check its siblings make, and ``largest_file`` in the families fixed in the
repository, the largest file of every app. This rates each probe as built against the apps
changed in the way that would most plausibly help, without building those apps:

- ``public_pages``: ``sibling_asymmetry`` if the administrator guide and the public count
  (where the app serves one) were each served from a router drawn among the eight every app
  has, rather than from the public router. A public page among signed-in handlers is a
  legitimate asymmetry that secure apps would carry as often as vulnerable ones; it is modelled
  as the probe's top score (1.0) in that router.
- ``repository_split``: ``largest_file`` if the repository's second half (users, audit log,
  tenant settings: from ``class UserRepository`` on) were a module of its own; a pointer at
  either half hits if the fix changes a line of it.

Template drafts of every seed given, compiled (never gated), in expected hits as
:func:`a01gym.factory.giveaway_gate.report` counts them; the what-ifs draw per scenario from a
stream of their own. docs/families.md holds a run.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
from pathlib import Path

from a01gym.factory import author, compiler, config, giveaway_gate, giveaways, layout
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

HOSTS = ("public", "records", "reports", "users", "files", "tenant", "admin", "internal")
"""The routers every app has: where a public page could be served from."""
SPLIT_AT = "\nclass UserRepository"


def _share(scores: dict[str, float], hit: set[str]) -> float:
    """The expected hit of a probe that names the top-scored paths (ties share)."""
    if not scores:
        return 0.0
    top = max(scores.values())
    tied = [path for path, score in scores.items() if score == top]
    return sum(path in hit for path in tied) / len(tied)


def _public_pages(
    spec: ScenarioSpec, files: dict[str, str], fixed: set[str], rng: random.Random
) -> float:
    scores = {path: share for path, (share, _) in giveaways._asymmetry_scores(files).items()}
    pages = 1 + ("public_stats" in spec.decoys)
    hosts = {f"app/routers/{rng.choice(HOSTS)}.py" for _ in range(pages)}
    hosts.discard("app/routers/public.py")  # where the pages are now: no change
    for path in files:
        if layout.canonical(spec.layout, path) in hosts:
            scores[path] = 1.0
    return _share(scores, fixed)


def _repository_split(
    spec: ScenarioSpec, bundle: Bundle, files: dict[str, str], fixed: set[str]
) -> float:
    sizes = {path: len(text) for path, text in files.items()}
    hit = set(fixed)
    repository = next(p for p in files if layout.canonical(spec.layout, p) == "app/repository.py")
    text = files[repository]
    cut = text.find(SPLIT_AT)
    if cut > 0:
        first_lines = text.count("\n", 0, cut) + 1
        sizes[repository], sizes["(second half)"] = cut, len(text) - cut
        hit.discard(repository)
        if repository in fixed:
            after = bundle.hidden.reference_fix.files[repository] or ""
            for i1, i2, _, _ in giveaways.changed_regions(text, after):
                if i1 < first_lines:
                    hit.add(repository)
                if i1 >= first_lines or i2 > first_lines:  # lines from first_lines on
                    hit.add("(second half)")
    largest = max(sizes.values())
    return _share({p: 1.0 for p, size in sizes.items() if size == largest}, hit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="28-29", help="first-last, inclusive")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    first, _, last = args.seeds.partition("-")
    hits: dict[tuple[str, str], float] = collections.Counter()
    chance: dict[str, float] = collections.Counter()
    scenarios: dict[str, int] = collections.Counter()
    for seed in range(int(first), int(last or first) + 1):
        rng = random.Random(f"{seed}\x00what-if")
        for request in author.plan(config.FactoryConfig(count=args.count, seed=seed)):
            spec = author.TemplateAuthor().draft(request)
            bundle = compiler.compile_bundle(spec)
            family = bundle.hidden.labels["family"]
            files = giveaways.python_files(bundle)
            fixed = set(bundle.hidden.reference_fix.files)
            scenarios[family] += 1
            chance[family] += len(fixed & set(files)) / len(files)
            for probe in ("sibling_asymmetry", "largest_file"):
                pointer = giveaways.PROBES[probe](bundle, [files], 0)
                hits[family, probe] += giveaway_gate.expected_hit(
                    pointer, lambda c, fixed=fixed: c.path in fixed
                )
            hits[family, "public_pages"] += _public_pages(spec, files, fixed, rng)
            hits[family, "repository_split"] += _repository_split(spec, bundle, files, fixed)
    pairs = {"sibling_asymmetry": "public_pages", "largest_file": "repository_split"}
    rows: dict[str, dict[str, object]] = {}
    for family, n in sorted(scenarios.items()):
        odds = chance[family] / n
        rows[family] = {"scenarios": n, "chance": round(odds, 3)}
        for probe, what_if in pairs.items():
            built, changed = hits[family, probe] / n, hits[family, what_if] / n
            rows[family][probe] = {
                "as_built": round(built / odds, 2),
                what_if: round(changed / odds, 2),
            }
    print(json.dumps(rows, indent=1))
    bar = giveaway_gate.GATE_FACTOR
    for probe, what_if in pairs.items():
        built, changed = (
            [f for f, row in rows.items() if row[probe][key] > bar]  # type: ignore[index]
            for key in ("as_built", what_if)
        )
        print(
            f"{probe}: {len(built)} families above {bar:g}x chance as built, {len(changed)} "
            f"with {what_if} ({', '.join(changed) or 'none'})"
        )
    if args.json_out:
        out = {"seeds": args.seeds, "count": args.count, "families": rows}
        args.json_out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
