"""The chart's CRDs are exactly what ``a01gym.operator.crd`` builds (the source of truth)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from a01gym.operator import crd

CRDS = Path(__file__).parents[3] / "charts" / "a01gym" / "crds"


@pytest.mark.parametrize("built", crd.all_crds(), ids=lambda c: c["metadata"]["name"])
def test_chart_crd_matches_operator_source_of_truth(built: dict) -> None:
    path = CRDS / f"{built['spec']['names']['plural']}.yaml"
    assert yaml.safe_load(path.read_text()) == built, (
        f"{path} is stale: regenerate with `a01gym operator crds` (one file per CRD)"
    )


def test_chart_ships_no_other_crds() -> None:
    assert sorted(p.stem for p in CRDS.glob("*.yaml")) == ["episodes", "sandboxpools"]
