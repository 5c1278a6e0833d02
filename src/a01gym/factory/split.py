"""Train/eval split: eval holds out whole domains AND whole families.

A scenario is ``eval`` when its domain or its family is held out, ``train`` otherwise, so no
train scenario shares a domain or a family with the held-out ones and the eval measures
generalisation to unseen apps and unseen bug shapes. The decision depends only on the spec's
labels and the config, so rebuilding gives the same split.
"""

from __future__ import annotations

from typing import Literal

from a01gym.factory.config import SplitConfig
from a01gym.factory.spec import ScenarioSpec

__all__ = ["EVAL_HINT_LEVEL", "Split", "as_built", "assign_split"]

Split = Literal["train", "eval"]

EVAL_HINT_LEVEL = 0
"""Held-out scenarios measure finding the bug unaided: the lowest hint level, no area named."""


def assign_split(domain: str, family: str, config: SplitConfig) -> Split:
    """The split of a scenario with ``domain`` and ``family``."""
    held_out = domain in config.eval_domains or family in config.eval_families
    return "eval" if held_out else "train"


def as_built(spec: ScenarioSpec, config: SplitConfig) -> ScenarioSpec:
    """``spec`` as a build compiles it: an eval scenario at :data:`EVAL_HINT_LEVEL`."""
    if assign_split(spec.domain.id, spec.bug.family, config) != "eval":
        return spec
    knobs = spec.knobs.model_copy(update={"hint_level": EVAL_HINT_LEVEL})
    return spec.model_copy(update={"knobs": knobs})
