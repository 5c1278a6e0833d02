"""Train/eval split: eval holds out whole domains AND whole families.

A scenario is ``eval`` when its domain or its family is held out, ``train`` otherwise, so no
train scenario shares a domain or a family with the held-out ones and the eval measures
generalisation to unseen apps and unseen bug shapes. The decision depends only on the spec's
labels and the config, so rebuilding gives the same split.
"""

from __future__ import annotations

from typing import Literal

from a01gym.factory.config import SplitConfig

__all__ = ["Split", "assign_split"]

Split = Literal["train", "eval"]


def assign_split(domain: str, family: str, config: SplitConfig) -> Split:
    """The split of a scenario with ``domain`` and ``family``."""
    held_out = domain in config.eval_domains or family in config.eval_families
    return "eval" if held_out else "train"
