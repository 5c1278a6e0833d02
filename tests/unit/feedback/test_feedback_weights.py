"""Band weighting: learnable cells weigh most, held-out cells never get a key, and the file a
gateway reads is replaced atomically and picked up by the sampler at the next pick."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import ValidationError

from a01gym.env import sampler
from a01gym.errors import ScenarioError
from a01gym.feedback import analysis, weights
from a01gym.feedback.analysis import CellReport, FailureMode
from a01gym.scenario.bundle import Bundle


def _cell(family: str, resolved: int, graded: int, split: str = "train") -> CellReport:
    return CellReport(
        family=family,
        difficulty="easy",
        split=split,
        episodes=graded,
        graded=graded,
        resolved=resolved,
        success_rate=resolved / graded if graded else None,
        failures={FailureMode.NEVER_FOUND: graded - resolved} if graded > resolved else {},
    )


def _analysis(*cells: CellReport) -> analysis.Analysis:
    return analysis.Analysis(
        episodes=sum(c.episodes for c in cells),
        graded=sum(c.graded for c in cells),
        resolved=sum(c.resolved for c in cells),
        failures={},
        cells=list(cells),
        verdicts=[],
    )


ANALYSIS = _analysis(
    _cell("F01", 5, 5),  # mastered
    _cell("F04", 2, 4),  # learnable
    _cell("F06", 0, 4),  # too hard
    _cell("F08", 1, 1),  # one episode: not trusted yet
    _cell("F09", 1, 2, split="eval"),  # learnable, but held out
)


def test_cells_in_the_band_weigh_most_and_mastered_least() -> None:
    plan = weights.curriculum(ANALYSIS)
    status = {c.key: c.status for c in plan.cells}
    assert status == {
        "F01/easy": weights.CellStatus.MASTERED,
        "F04/easy": weights.CellStatus.LEARNABLE,
        "F06/easy": weights.CellStatus.TOO_HARD,
        "F08/easy": weights.CellStatus.UNSEEN,
    }
    flat = plan.weights()
    assert flat["F04/easy"] > flat["F08/easy"] == flat["*"] > flat["F06/easy"] > flat["F01/easy"]


def test_held_out_cells_never_get_a_weight() -> None:
    plan = weights.curriculum(ANALYSIS)
    assert plan.held_out == ["eval:F09/easy"]
    assert not [key for key in plan.weights() if key.startswith("F09")]


def test_the_band_is_configurable() -> None:
    narrow = weights.BandConfig(low=0.6, high=0.9, min_episodes=1)
    status = {c.key: c.status for c in weights.curriculum(ANALYSIS, narrow).cells}
    assert status["F04/easy"] is weights.CellStatus.TOO_HARD
    assert status["F08/easy"] is weights.CellStatus.MASTERED
    with pytest.raises(ValidationError, match="above band high"):
        weights.BandConfig(low=0.9, high=0.1)


@dataclasses.dataclass
class _Source:
    items: list[sampler.ScenarioEntry]

    def entries(
        self, *, split: str | None = None, family: str | None = None, difficulty: str | None = None
    ) -> Sequence[sampler.ScenarioEntry]:
        return [e for e in self.items if split is None or e.split == split]

    def load(self, hash: str) -> Bundle:
        raise ScenarioError(hash)


def _entry(h: str, family: str, split: str = "train") -> sampler.ScenarioEntry:
    return sampler.ScenarioEntry(h * 8, family, "CWE-639", "notes", "easy", split)


@pytest.mark.parametrize("name", ["weights.json", "weights.yaml"])
def test_written_weights_steer_a_running_sampler_at_its_next_pick(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "feedback" / name
    source = _Source([_entry("a", "F01"), _entry("b", "F04"), _entry("c", "F09", "eval")])
    picker = sampler.CurriculumSampler(source, weights_path=path)
    assert {picker.pick(i).family for i in range(40)} == {"F01", "F04"}  # no file: uniform
    weights.write_weights(path, {"*": 0.0, "F04/easy": 1.0})
    assert {picker.pick(i).family for i in range(40)} == {"F04"}
    weights.write_weights(path, {"*": 0.0, "F01/easy": 1.0})  # same second, new inode
    assert {picker.pick(i).family for i in range(40)} == {"F01"}
    assert sampler.load_weights(path) == {"*": 0.0, "F01/easy": 1.0}
    assert [p.name for p in path.parent.iterdir()] == [name]  # no temp file left


def test_weights_never_steer_the_eval_split(tmp_path: Path) -> None:
    path = tmp_path / "weights.json"
    source = _Source([_entry("c", "F09", "eval"), _entry("d", "F17", "eval")])
    weights.write_weights(path, {"*": 0.0, "F09/easy": 1.0})
    picker = sampler.CurriculumSampler(source, weights_path=path)
    assert {picker.pick(i, split="eval").family for i in range(40)} == {"F09", "F17"}


def test_a_bad_rewrite_keeps_the_last_good_weights(tmp_path: Path) -> None:
    path = tmp_path / "weights.json"
    source = _Source([_entry("a", "F01"), _entry("b", "F04")])
    weights.write_weights(path, {"*": 0.0, "F04/easy": 1.0})
    picker = sampler.CurriculumSampler(source, weights_path=path)
    assert picker.pick(0).family == "F04"
    loaded_at = picker.stats().loaded_at
    path.write_text(json.dumps({"F01/easy": -3}))
    assert {picker.pick(i).family for i in range(20)} == {"F04"}
    assert picker.weights() == {"*": 0.0, "F04/easy": 1.0}
    assert picker.stats() == sampler.CurriculumStats(loaded=1, rejected=1, loaded_at=loaded_at)
