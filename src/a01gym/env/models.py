"""The environment's wire contract: actions, observations, episode state, reward breakdown.

These are the only shapes a trainer sees. An action is one JSON object whose ``tool`` field
picks the variant of a pydantic discriminated union; every model forbids extra fields, so a
typo is a clear validation error instead of a silently ignored key. The gateway serialises
:class:`A01Observation` flattened into OpenEnv's ``{"observation", "reward", "done"}`` envelope;
``reward`` is ``null`` on every step but the terminal one, and ``reward_breakdown`` is only
ever set there, so nothing reachable mid-episode carries a hidden score.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "ACTION_ADAPTER",
    "TOOL_NAMES",
    "A01Action",
    "A01Observation",
    "ActorInfo",
    "AskExpert",
    "EditFile",
    "EpisodeState",
    "ErrorCode",
    "ErrorInfo",
    "HiddenTestOutcome",
    "HttpRequest",
    "ListFiles",
    "Phase",
    "ReadFile",
    "RewardBreakdown",
    "RewardPenalties",
    "RewardShaping",
    "RunTests",
    "Search",
    "Submit",
    "WriteFile",
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- actions ---------------------------------------------------------------------------------
class ListFiles(_Wire):
    """List every file in the workspace with its size."""

    tool: Literal["list_files"]


class ReadFile(_Wire):
    """Read a workspace file, optionally only lines ``start_line``..``end_line`` (1-based)."""

    tool: Literal["read_file"]
    path: str = Field(min_length=1, max_length=1024)
    start_line: int | None = Field(None, ge=1)
    end_line: int | None = Field(None, ge=1)


class Search(_Wire):
    """Search the workspace's lines for a fixed string (case-sensitive by default), or for a
    regular expression with ``regex``, optionally under one path."""

    tool: Literal["search"]
    pattern: str = Field(min_length=1, max_length=500)
    path: str | None = Field(None, max_length=1024)
    ignore_case: bool = Field(False, description="Match regardless of letter case.")
    regex: bool = Field(
        False, description="Treat pattern as a regular expression (Python syntax), not text."
    )


class HttpRequest(_Wire):
    """Send an HTTP request to the running app as one of the scenario's actors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: Literal["http_request"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    path: str = Field(pattern=r"^/", max_length=4096)
    actor: str = Field("anonymous", max_length=64)
    auth: Literal["bearer", "cookie"] = Field(
        "bearer",
        description="How the actor's session is sent: 'bearer' (the Authorization header) or "
        "'cookie' (the session cookie, as the actor's browser sends it).",
    )
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, Any] = Field(default_factory=dict)
    json_body: Any = Field(None, alias="json")
    body: str | None = Field(None, max_length=256 * 1024)


class EditFile(_Wire):
    """Replace the one exact occurrence of ``old`` in ``path`` with ``new`` (``line`` chooses
    one of several: the 1-based line the occurrence starts on)."""

    tool: Literal["edit_file"]
    path: str = Field(min_length=1, max_length=1024)
    old: str = Field(min_length=1)
    new: str
    line: int | None = Field(
        None,
        ge=1,
        description="When `old` occurs more than once: the line (1-based) the one to replace "
        "starts on, as read_file and search number it.",
    )


class WriteFile(_Wire):
    """Create or overwrite a workspace file with ``content``."""

    tool: Literal["write_file"]
    path: str = Field(min_length=1, max_length=1024)
    content: str


class RunTests(_Wire):
    """Run the visible tests against the current app."""

    tool: Literal["run_tests"]


class AskExpert(_Wire):
    """Ask a stronger model for advice (only in episodes that offer it; a few calls at most).

    The expert sees what you see: the task, the policy, the files as you left them, the visible
    tests and your steps so far.
    """

    tool: Literal["ask_expert"]
    question: str = Field(min_length=1, max_length=2000)


class Submit(_Wire):
    """End the episode: the current workspace is graded by the hidden tests."""

    tool: Literal["submit"]


A01Action = Annotated[
    ListFiles
    | ReadFile
    | Search
    | HttpRequest
    | EditFile
    | WriteFile
    | RunTests
    | AskExpert
    | Submit,
    Field(discriminator="tool"),
]
"""One step's action; ``tool`` selects the variant."""

ACTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(A01Action)

TOOL_NAMES: tuple[str, ...] = (
    "list_files",
    "read_file",
    "search",
    "http_request",
    "edit_file",
    "write_file",
    "run_tests",
    "ask_expert",
    "submit",
)


# -- observations ----------------------------------------------------------------------------
class Phase(enum.StrEnum):
    """Where the episode is: reading, changing code, checking the change, finished."""

    EXPLORE = "explore"
    PATCH = "patch"
    VERIFY = "verify"
    DONE = "done"


class ErrorCode(enum.StrEnum):
    """Why an action did not do what was asked. Stable; trainers may branch on them."""

    INVALID_ACTION = "invalid_action"
    UNKNOWN_TOOL = "unknown_tool"
    PATH_INVALID = "path_invalid"
    NOT_FOUND = "not_found"
    NOT_TEXT = "not_text"
    TOO_LARGE = "too_large"
    EDIT_NOT_FOUND = "edit_not_found"
    EDIT_NOT_UNIQUE = "edit_not_unique"
    UNKNOWN_ACTOR = "unknown_actor"
    BAD_REQUEST = "bad_request"
    APP_START_FAILED = "app_start_failed"
    APP_BROKEN = "app_broken"
    """The app started after an edit but fails the request that checks it (a 5xx)."""
    APP_NOT_RUNNING = "app_not_running"
    APP_TIMEOUT = "app_timeout"
    SANDBOX_LOST = "sandbox_lost"
    NO_EPISODE = "no_episode"
    EPISODE_DONE = "episode_done"
    VERIFICATION_FAILED = "verification_failed"
    EXPERT_OFF = "expert_off"
    EXPERT_BUDGET = "expert_budget"
    EXPERT_UNAVAILABLE = "expert_unavailable"


class ErrorInfo(_Wire):
    code: ErrorCode
    message: str


class ActorInfo(_Wire):
    """An identity the agent can act as in ``http_request``."""

    name: str
    role: str
    tenant: str | None = None
    description: str = ""
    headers: dict[str, str] = Field(
        default_factory=dict, description="The actor's auth headers in this episode's world."
    )


class HiddenTestOutcome(_Wire):
    """One hidden test's result, in the vocabulary of :mod:`a01gym.grading.verdicts` (the
    same fields ``run_tests`` and ``verification.json`` use). Definitions and evidence are
    never sent.
    """

    id: str
    kind: Literal["exploit", "regression", "guard"]
    outcome: Literal["blocked", "exploited", "works", "broken", "inconclusive"] = Field(
        description="What happened, from the fix's side."
    )
    passed: bool = Field(
        description="True when the test counts towards the score: exploit blocked, "
        "regression working."
    )


class RewardPenalties(_Wire):
    invalid_actions: float = 0.0
    broken_app: float = 0.0
    removed_routes: float = 0.0
    steps: float = 0.0


class RewardShaping(_Wire):
    """Expert-related shaping, reported beside the reward and never part of it.

    ``reward`` and ``score`` (security x regression) are the same whether or not the expert was
    offered; a trainer that wants shaping adds ``total`` itself (``a01gym train`` does). Every
    component is zero when the episode did not offer the expert.
    """

    expert_offered: bool = False
    expert_calls: int = 0
    solo_bonus: float = 0.0
    recovery_bonus: float = 0.0
    blind_call_penalty: float = 0.0
    total: float = Field(0.0, description="solo_bonus + recovery_bonus - blind_call_penalty.")


class RewardBreakdown(_Wire):
    """How the terminal reward was made. Only ever present on the terminal observation."""

    reward: float
    score: float = Field(
        description="The hidden score before penalties: 1 when resolved, 0.2 * security when "
        "every regression test passes, else 0."
    )
    security: float
    regression: float
    resolved: bool
    penalties: RewardPenalties
    invalid_actions: int
    steps_used: int
    app_started: bool | None = Field(
        description="Whether the graded app started; null when grading could not run (unknown, "
        "so no broken-app penalty)."
    )
    removed_routes: list[str] = Field(default_factory=list)
    tests: list[HiddenTestOutcome] = Field(default_factory=list)
    labels: dict[str, str] = Field(
        default_factory=dict, description="family, difficulty, cwe, domain of the scenario."
    )
    verify_ms: float = 0.0
    grading: Literal["complete", "decided", "app_down", "deadline"] | None = Field(
        None,
        description="How the hidden run ended: every test ran; a regression test failed, so "
        "the score was 0 and the tests after it did not run; the app did not start; or the "
        "grading deadline passed (tests not run count as not passed). Null if it could not run.",
    )
    error: str | None = Field(None, description="Set when grading itself could not run.")
    shaping: RewardShaping = Field(default_factory=RewardShaping)


class A01Observation(_Wire):
    """What the agent sees after each action (and after reset)."""

    tool: str | None = Field(None, description="The tool that produced this, null on reset.")
    output: str = Field(description="Text for an LLM.")
    result: Any = Field(None, description="The same content, structured.")
    error: ErrorInfo | None = None
    phase: Phase
    steps_left: int
    reward_breakdown: RewardBreakdown | None = None
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="OpenEnv's observation metadata. On reset, 'task' repeats output: "
        "openenv-core 0.3's MCPToolClient keeps only metadata of a reset.",
    )


# -- state -----------------------------------------------------------------------------------
class EpisodeState(_Wire):
    """What ``state`` returns: bookkeeping only, never anything about hidden tests."""

    episode_id: str | None = None
    step_count: int = 0
    scenario: str | None = Field(None, description="Content hash of the scenario bundle.")
    split: str | None = None
    seed: int | None = None
    phase: Phase = Phase.EXPLORE
    steps_left: int = 0
    max_steps: int = 0
    done: bool = False
    invalid_actions: int = 0
    files_changed: list[str] = Field(default_factory=list)
    reward: float | None = Field(None, description="The terminal reward, once done.")
