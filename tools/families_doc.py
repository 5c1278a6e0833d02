"""Rewrite the generated tables in docs/families.md: the family table from the factory's
registry, and over a 300-draft plan the hidden exploits per scenario of each family and the
policy clauses the hidden tests check.

    .venv/bin/python tools/families_doc.py

tests/unit/test_docs.py fails when a table and the code disagree.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

from a01gym.factory import author, clauses, config, exploits, families

DOC = Path(__file__).parents[1] / "docs" / "families.md"
EXPLOIT_PLAN = {"count": 300, "seed": 28}
"""The drafts the exploit and clause tables count over (specs only: the suite is a pure
function of one)."""


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", re.DOTALL)


def exploit_table() -> str:
    """Per family: the fewest and most hidden exploits of a scenario over the plan's drafts."""
    counts: dict[str, list[int]] = collections.defaultdict(list)
    for request in author.plan(config.FactoryConfig(**EXPLOIT_PLAN)):
        spec = author.TemplateAuthor().draft(request)
        counts[spec.bug.family].append(len(exploits.exploit_tests(spec)))
    rows = [
        f"| {family} | {len(n)} | {min(n)} | {max(n)} |" for family, n in sorted(counts.items())
    ]
    head = "| id | drafts | fewest exploits | most exploits |\n|---|---|---|---|"
    return "\n".join([head, *rows]) + "\n"


def clause_table() -> str:
    """Per policy clause: the drafts that state it, attack it, use it legitimately, break it
    and, broken, test both sides (``a01gym factory clauses``)."""
    specs = (
        author.TemplateAuthor().draft(r) for r in author.plan(config.FactoryConfig(**EXPLOIT_PLAN))
    )
    rows = [
        f"| `{r.key}` | {r.stated} | {r.forbidden} | {r.allowed} | {r.touched} | {r.touched_both} |"
        for r in clauses.report(specs)
    ]
    head = (
        "| clause | stated | attacked | legitimate use | broken by the bug | broken: both sides |\n"
        "|---|---|---|---|---|---|"
    )
    return "\n".join([head, *rows]) + "\n"


def tables() -> dict[str, str]:
    """Each generated block's text, by the block's name."""
    return {
        "families": families.catalog_table(),
        "exploits": exploit_table(),
        "clauses": clause_table(),
    }


def main() -> None:
    text = DOC.read_text()
    generated = tables()
    for name, table in generated.items():
        if not _block(name).search(text):
            raise SystemExit(f"{DOC} has no <!-- {name}:begin --> ... <!-- {name}:end --> block")
        text = _block(name).sub(lambda m, table=table: m.group(1) + table + m.group(2), text)
    DOC.write_text(text)
    print(f"wrote the {', '.join(generated)} tables to {DOC}")


if __name__ == "__main__":
    main()
