"""The environment as TRL sees it: one class whose public methods are the agent's tools.

A TRL user writes ``GRPOTrainer(..., environment_factory=A01ToolEnv)``. TRL builds one instance
per rollout without arguments (so the gateway comes from :meth:`A01ToolEnv.configure` or
``A01GYM_GATEWAY_URL``), calls ``reset(**row)`` with the dataset row (``seed``, ``split``,
``family``, ``difficulty``, ``scenario``) and appends the returned task to the prompt, turns every
public method but ``reset``/``get_reward`` into a tool from its type hints and docstring, and adds
``get_reward()`` as the reward. Tool names and arguments are the gateway's actions one to one, so
a trajectory logged by any agent replays as the same tool calls (see ``trajectories``).

TRL runs these tools one sample after another; ``a01gym train`` drives the same sessions through
:mod:`a01gym.training.rollout` instead, which overlaps them across the batch.

With an :class:`~a01gym.training.expertratio.ExpertRatio` configured, each reset takes the next
rollout's "expert allowed" flag from it (groups of ``group_size`` in order, as TRL repeats each
prompt), and ``get_reward`` reports the outcome back and adds the shaping total if asked to.
Without one every episode is solo.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from a01gym.env import briefing
from a01gym.training import session as _session
from a01gym.training.expertratio import ExpertRatio

__all__ = ["A01ExpertToolEnv", "A01ToolEnv"]


class A01ToolEnv:
    """Find and fix the broken access control in a small FastAPI app, then submit."""

    _settings: ClassVar[dict[str, Any]] = {}
    _ratio: ClassVar[ExpertRatio | None] = None
    _group_size: ClassVar[int] = 1
    _shaping_in_reward: ClassVar[bool] = False

    @classmethod
    def configure(
        cls,
        base_url: str | None = None,
        *,
        expert_ratio: ExpertRatio | None = None,
        group_size: int = 1,
        shaping_in_reward: bool = False,
        **settings: Any,
    ) -> None:
        """Class-wide :class:`~a01gym.training.session.EpisodeSession` settings for TRL's instances.

        Args:
            base_url: The gateway, e.g. ``http://127.0.0.1:8000``.
            expert_ratio: Decides which rollouts may ask the expert; None: all solo.
            group_size: Rollouts per GRPO group (TRL's ``num_generations``).
            shaping_in_reward: Add the terminal ``shaping.total`` to the reward.
            settings: ``max_output_chars``, ``message_timeout_s``, ``reconnect_attempts``.
        """
        cls._settings = {"base_url": base_url, **settings}
        cls._ratio = expert_ratio
        cls._group_size = group_size
        cls._shaping_in_reward = shaping_in_reward

    def __init__(self) -> None:
        self.session = _session.EpisodeSession(**self._settings)

    def _act(self, **action: Any) -> str:
        name = action.pop("tool")
        return _session.run_sync(self.session.step(_session.tool_action(name, action)))

    def reset(self, **row: Any) -> str:
        """Start the episode for this dataset row; returns the task for the prompt (as every
        training path shows it: :func:`a01gym.env.briefing.without_wire_tools`)."""
        if self._ratio is not None:
            row["expert"] = self._ratio.next_flag(self._group_size)
        return briefing.without_wire_tools(_session.run_sync(self.session.reset(**row)))

    def get_reward(self) -> float:
        """The environment's terminal reward (submits first if the model did not), plus the
        expert shaping total when configured."""
        reward = _session.run_sync(self.session.finish())
        resolved = bool((self.session.breakdown or {}).get("resolved"))
        if self._ratio is not None:
            self._ratio.observe([(self.session.expert_allowed, resolved)])
        if self._shaping_in_reward:
            reward += float(self.session.shaping.get("total", 0.0))
        return reward

    def list_files(self) -> str:
        """List every file in the app's workspace with its size."""
        return self._act(tool="list_files")

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Read a workspace file, or only some of its lines.

        Args:
            path: File path relative to the workspace, e.g. app/main.py.
            start_line: First line to read (1-based), or null for the start.
            end_line: Last line to read, or null for the end.
        """
        return self._act(tool="read_file", path=path, start_line=start_line, end_line=end_line)

    def search(
        self,
        pattern: str,
        path: str | None = None,
        ignore_case: bool = False,
        regex: bool = False,
    ) -> str:
        """Search the workspace's lines for a fixed string, or a regular expression.

        Args:
            pattern: The text to find (case-sensitive unless ignore_case), or a regular
                expression (Python syntax) when regex is true.
            path: Only search under this file or folder, or null for everywhere.
            ignore_case: Match regardless of letter case.
            regex: Treat pattern as a regular expression.
        """
        return self._act(
            tool="search", pattern=pattern, path=path, ignore_case=ignore_case, regex=regex
        )

    def http_request(
        self,
        method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"],
        path: str,
        actor: str = "anonymous",
        json_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        auth: Literal["bearer", "cookie"] = "bearer",
    ) -> str:
        """Send an HTTP request to the running app as one of the scenario's actors.

        Args:
            method: The HTTP method.
            path: The request path, e.g. /notes/3.
            actor: The actor to act as (named in the task), or anonymous.
            json_body: A JSON object to send as the request body, or null.
            headers: Extra request headers (Origin, X-CSRF-Token, Cookie, ...), or null.
            auth: How the actor's session is sent: bearer (Authorization header) or cookie
                (the session cookie, as the actor's browser sends it).
        """
        return self._act(
            tool="http_request",
            method=method,
            path=path,
            actor=actor,
            json_body=json_body,
            headers=headers or {},
            auth=auth,
        )

    def edit_file(self, path: str, old: str, new: str, line: int | None = None) -> str:
        """Replace the one exact occurrence of old text in a file with new text.

        Args:
            path: File path relative to the workspace.
            old: The exact text to replace; it must occur once, or start on `line`.
            new: The replacement text.
            line: When old occurs more than once, the line (1-based) the one to replace starts on.
        """
        return self._act(tool="edit_file", path=path, old=old, new=new, line=line)

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a workspace file.

        Args:
            path: File path relative to the workspace.
            content: The whole new content of the file.
        """
        return self._act(tool="write_file", path=path, content=content)

    def run_tests(self) -> str:
        """Run the visible tests against the current app."""
        return self._act(tool="run_tests")

    def submit(self) -> str:
        """End the episode: hidden tests grade the current workspace."""
        return self._act(tool="submit")


class A01ExpertToolEnv(A01ToolEnv):
    """:class:`A01ToolEnv` with the ``ask_expert`` tool, for runs that offer an expert.

    A separate class because TRL offers every public method as a tool in every episode: offered
    ``ask_expert`` in solo episodes, Qwen2.5-Coder-0.5B called it every turn and got
    ``expert_off`` every time.
    """

    def ask_expert(self, question: str) -> str:
        """Ask a stronger model for advice; only in episodes that offer it, a few times at most.

        Args:
            question: What you need to know, e.g. which handler misses its ownership check.
        """
        return self._act(tool="ask_expert", question=question)
