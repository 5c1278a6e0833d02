"""Keep the chart's schema for ``jobs.grpo.config`` identical to ``a01gym train``'s config model.

``values.schema.json`` holds ``definitions.trainConfig``: :class:`TrainConfig`'s JSON schema with
every ``$ref`` inlined (draft-07, so ``helm lint`` and ``helm install`` reject a typo in the
training config before a pod starts). ``tests/integration/k8s/test_chart.py`` fails when the two
drift; then run:

    .venv/bin/python tools/chart_schema.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from a01gym.training.config import TrainConfig

SCHEMA = Path(__file__).resolve().parents[1] / "charts" / "a01gym" / "values.schema.json"
_DROP = {"title", "default"}  # defaults live in the model; titles only repeat the key


def train_config_schema() -> dict[str, Any]:
    """TrainConfig's schema, self-contained: refs inlined, titles, defaults and formats dropped."""
    schema = TrainConfig.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = inline(defs[node["$ref"].rsplit("/", 1)[-1]])
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return {
            key: inline(value)
            for key, value in node.items()
            if key not in _DROP and not (key == "format" and value == "path")
        }

    return inline(schema)


def main() -> int:
    """Rewrite only the ``"trainConfig": {...}`` block; the rest of the file keeps its layout."""
    text = SCHEMA.read_text(encoding="utf-8")
    key = '    "trainConfig": '
    start = text.index(key) + len(key)
    _, length = json.JSONDecoder().raw_decode(text[start:])
    block = json.dumps(train_config_schema(), indent=2).replace("\n", "\n    ")
    SCHEMA.write_text(text[:start] + block + text[start + length :], encoding="utf-8")
    print(f"wrote definitions.trainConfig in {SCHEMA}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
