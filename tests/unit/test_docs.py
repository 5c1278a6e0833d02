"""The docs agree with the code they describe: the family table and the weights example."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from a01gym.env import sampler
from a01gym.factory import families

DOCS = Path(__file__).parents[2] / "docs"
sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))

import families_doc  # noqa: E402  (tools/ is not a package)


def test_generated_tables_match_the_code() -> None:
    """The family table (the registry) and the exploits per family (a 300-draft plan)."""
    text = (DOCS / "families.md").read_text()
    tables = families_doc.tables()
    assert tables["families"] == families.catalog_table()
    for name, table in tables.items():
        block = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.DOTALL)
        assert block is not None, f"docs/families.md lost its generated {name} block"
        assert block.group(1) == table, (
            "docs/families.md is out of date: run .venv/bin/python tools/families_doc.py"
        )


def test_the_table_names_every_registered_id_once_with_its_owasp_fit() -> None:
    rows = [line.split(" | ") for line in families.catalog_table().splitlines()[2:]]
    assert [row[0].lstrip("| ") for row in rows] == sorted(families.FAMILIES)
    for row in rows:
        family_id, fit = row[0].lstrip("| "), row[3]
        assert fit == (families.FAMILIES[family_id].mapping or families.OWASP_A01)
        assert row[2].startswith("CWE-")
    loose = {f.id for f in families.FAMILIES.values() if f.mapping.startswith("loose")}
    assert loose == {"F12", "F15", "F16", "F21"}


def test_the_documented_weights_example_loads_and_names_real_families(tmp_path: Path) -> None:
    text = (DOCS / "families.md").read_text()
    example = re.search(r"```json\n(.*?)\n```", text, re.DOTALL)
    assert example is not None
    path = tmp_path / "weights.json"
    path.write_text(example.group(1))
    weights = sampler.load_weights(path)
    assert weights == json.loads(example.group(1))
    for key in weights:
        assert key == "*" or key.split("/")[0] in families.FAMILIES or key.startswith("*/")
