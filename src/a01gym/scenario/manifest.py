"""The bundle's wire format: ``manifest.json`` (public) and ``hidden.json`` (never in a sandbox).

``manifest.json`` holds what the runtime may show the agent: entrypoint, actors, budgets, the
task's policy text, the visible tests and the route inventory (recorded once, at build time, so
neither a reset nor grading has to ask a running app for it). ``hidden.json`` holds what
decides the reward: hidden tests, the fixture template, the reference fix, the trap patches and
the labels of the bug. The runtime copies only ``workspace/`` into a sandbox.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from a01gym.scenario.httptest import HttpTest, TestKind

__all__ = [
    "FORMAT_VERSION",
    "Actor",
    "Budget",
    "Fixture",
    "HiddenPart",
    "Manifest",
    "Patch",
    "RewardSpec",
]

FORMAT_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Actor(_Model):
    """Someone the agent (and the tests) can act as. Header values are fixture templates."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    role: Literal["anonymous", "user", "support", "manager", "admin"]
    tenant: str | None = None
    description: str = ""
    headers: dict[str, str] = Field(default_factory=dict)


ANONYMOUS = Actor(name="anonymous", role="anonymous", description="No credentials at all.")


class Budget(_Model):
    """Limits of one episode."""

    max_steps: int = Field(40, ge=1)
    max_write_bytes: int = Field(64 * 1024, ge=1, description="Largest single file write.")


class RewardSpec(_Model):
    """Reward weights, bound to the scenario; a client can never set them."""

    invalid_action_penalty: float = Field(0.02, ge=0, le=1)
    invalid_action_cap: float = Field(0.1, ge=0, le=1)
    broken_app_penalty: float = Field(0.2, ge=0, le=1)
    removed_route_penalty: float = Field(0.1, ge=0, le=1)
    step_cost: float = Field(0.0, ge=0, le=0.05)


class Fixture(_Model):
    """Database rows to seed, as templates. Tables listed with no rows are emptied."""

    tables: dict[str, list[dict[str, object]]] = Field(default_factory=dict)


class Patch(_Model):
    """A change to the workspace as whole-file overlays; ``None`` deletes the file."""

    description: str = ""
    files: dict[str, str | None] = Field(default_factory=dict)


class Manifest(_Model):
    """The public part of a bundle."""

    format_version: Literal[1] = FORMAT_VERSION
    content_hash: str = Field("", description="sha256 of the bundle; empty while building.")
    name: str
    title: str = ""
    entrypoint: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    actors: list[Actor] = Field(min_length=1)
    budget: Budget = Field(default_factory=Budget)
    reward: RewardSpec = Field(default_factory=RewardSpec)
    policy: str = Field("", description="The access policy in words, at the hint level.")
    visible_seed: int = Field(0, ge=0, description="Seed that renders the agent's world.")
    visible_tests: list[HttpTest] = Field(default_factory=list)
    routes: list[str] = Field(
        default_factory=list,
        description="'METHOD /path' of every route the unmodified app serves, as its OpenAPI "
        "document lists them: the one record of the inventory. Hidden tests check it with "
        "an inventory assertion naming no routes, and grading reports the routes the agent's "
        "app no longer serves. Empty: not recorded (no route check).",
    )

    @model_validator(mode="after")
    def _actors_unique(self) -> Manifest:
        names = [actor.name for actor in self.actors]
        if len(names) != len(set(names)):
            raise ValueError(f"actor names must be unique, got {names}")
        return self

    def actor(self, name: str) -> Actor | None:
        """The actor called ``name``; ``anonymous`` always exists."""
        if name == ANONYMOUS.name:
            return next((a for a in self.actors if a.name == name), ANONYMOUS)
        return next((a for a in self.actors if a.name == name), None)


class HiddenPart(_Model):
    """What decides the reward. Never copied into a sandbox, never shown before the end."""

    fixture: Fixture = Field(default_factory=Fixture)
    tests: list[HttpTest] = Field(min_length=1)
    reference_fix: Patch
    traps: dict[str, Patch] = Field(default_factory=dict)
    labels: dict[str, str] = Field(
        default_factory=dict, description="family, cwe, owasp, domain, difficulty, ..."
    )

    @model_validator(mode="after")
    def _has_both_kinds(self) -> HiddenPart:
        kinds = {test.kind for test in self.tests}
        if not {TestKind.EXPLOIT, TestKind.REGRESSION} <= kinds:
            raise ValueError("hidden tests need at least one exploit and one regression test")
        return self
