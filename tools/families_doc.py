"""Rewrite the family table in docs/families.md from the factory's registry.

    .venv/bin/python tools/families_doc.py

tests/unit/test_docs.py fails when the table and the registry disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

from a01gym.factory import families

DOC = Path(__file__).parents[1] / "docs" / "families.md"
BLOCK = re.compile(r"(<!-- families:begin -->\n).*?(<!-- families:end -->)", re.DOTALL)


def main() -> None:
    text = DOC.read_text()
    if not BLOCK.search(text):
        raise SystemExit(f"{DOC} has no <!-- families:begin --> ... <!-- families:end --> block")
    DOC.write_text(BLOCK.sub(lambda m: m.group(1) + families.catalog_table() + m.group(2), text))
    print(f"wrote the table of {len(families.FAMILIES)} families to {DOC}")


if __name__ == "__main__":
    main()
