"""Curriculum weights from an analysis: train where the policy can learn.

GRPO learns only from groups whose rewards differ, so a cell the policy always solves
(mastered) or never solves (too hard) teaches it little. :func:`curriculum` gives each train
family × difficulty cell a weight by its success rate against a learnable band (default
20–80 %); :func:`write_weights` writes them in the flat format
:class:`~a01gym.env.sampler.CurriculumSampler` reads, atomically, so a running gateway picks
them up at its next reset (the sampler re-reads the file when its ``stat`` changes).

Only ``train`` cells get a key, and the sampler applies weights to the ``train`` split only:
the held-out eval split is never reweighted, whatever the logs hold.
"""

from __future__ import annotations

import enum
import json
import os
import tempfile
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from a01gym.env import sampler
from a01gym.feedback.analysis import Analysis, CellReport

__all__ = ["BandConfig", "CellStatus", "CellWeight", "Curriculum", "curriculum", "write_weights"]


class CellStatus(enum.StrEnum):
    """Where a cell's success rate sits against the learnable band."""

    LEARNABLE = "learnable"
    TOO_HARD = "too_hard"
    MASTERED = "mastered"
    UNSEEN = "unseen"


class BandConfig(BaseModel):
    """The learnable band and the weight of each status (``a01gym analyze`` options)."""

    model_config = ConfigDict(extra="forbid")

    low: float = Field(0.2, ge=0, le=1, description="Lowest learnable success rate.")
    high: float = Field(0.8, ge=0, le=1, description="Highest learnable success rate.")
    min_episodes: int = Field(
        2, ge=1, description="Graded episodes a cell needs before its rate is trusted."
    )
    learnable: float = Field(4.0, ge=0, description="Weight of a cell inside the band.")
    too_hard: float = Field(0.5, ge=0, description="Weight of a cell below the band.")
    mastered: float = Field(0.25, ge=0, description="Weight of a cell above the band.")
    unseen: float = Field(1.0, ge=0, description="Weight of a cell with too few episodes.")

    @model_validator(mode="after")
    def _ordered(self) -> BandConfig:
        if self.low > self.high:
            raise ValueError(f"band low {self.low} is above band high {self.high}")
        return self

    def status(self, cell: CellReport) -> CellStatus:
        """Where ``cell`` sits."""
        if cell.success_rate is None or cell.graded < self.min_episodes:
            return CellStatus.UNSEEN
        if cell.success_rate < self.low:
            return CellStatus.TOO_HARD
        if cell.success_rate > self.high:
            return CellStatus.MASTERED
        return CellStatus.LEARNABLE

    def weight(self, status: CellStatus) -> float:
        return float(getattr(self, status.value))


class CellWeight(BaseModel):
    """One train cell's weight and why."""

    key: str = Field(description="family/difficulty")
    status: CellStatus
    success_rate: float | None
    graded: int
    weight: float


class Curriculum(BaseModel):
    """The weights to write, every train cell's reason, and the cells left alone."""

    band: BandConfig
    cells: list[CellWeight]
    held_out: list[str] = Field(
        default_factory=list, description="Cells of other splits: never weighted."
    )

    def weights(self) -> dict[str, float]:
        """The sampler's flat mapping; unseen cells fall through to ``"*"``."""
        return {"*": self.band.unseen} | {cell.key: cell.weight for cell in self.cells}


def curriculum(analysis: Analysis, band: BandConfig | None = None) -> Curriculum:
    """The weight of every train cell in ``analysis``."""
    band = band or BandConfig()
    cells, held_out = [], []
    for cell in analysis.cells:
        if cell.split != sampler.WEIGHTED_SPLIT:
            held_out.append(f"{cell.split}:{cell.key}")
            continue
        status = band.status(cell)
        cells.append(
            CellWeight(
                key=cell.key,
                status=status,
                success_rate=cell.success_rate,
                graded=cell.graded,
                weight=band.weight(status),
            )
        )
    return Curriculum(band=band, cells=cells, held_out=held_out)


def write_weights(path: Path, weights: dict[str, float]) -> None:
    """Replace the weights file at ``path`` in one ``rename`` (JSON, or YAML by suffix), so a
    gateway reading it at a reset sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in (".yaml", ".yml"):
        text = yaml.safe_dump(weights, sort_keys=True)
    else:
        text = json.dumps(weights, indent=2, sort_keys=True) + "\n"
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
