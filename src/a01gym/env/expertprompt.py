"""What the expert is told: only what the agent itself may see, never the hidden part.

The prompt is built from four sources, all agent-visible: the briefing the agent got on reset
(task, access policy, actors, files, tools), the workspace files as the agent has left them
(the pristine workspace with the episode's writes laid over it), the manifest's *visible* tests,
and the episode so far (each action and the text it returned). ``bundle.hidden`` (hidden tests,
fixture templates, reference fix, trap patches, labels) is never read here; the integration
test ``tests/integration/test_expert.py`` checks that with canaries from ``hidden.json`` against
every prompt a stub endpoint receives.

Long inputs are cut to ``max_chars`` in a fixed order of priority: the question and briefing
first, then the most recent steps, then the files.
"""

from __future__ import annotations

import json
from typing import Any

from a01gym.env.episode import Episode

__all__ = ["SYSTEM_PROMPT", "expert_messages"]

SYSTEM_PROMPT = (
    "You are a senior application-security engineer coaching a junior agent that must find and "
    "fix broken access control (OWASP A01) in a small FastAPI app without breaking legitimate "
    "use. You see exactly what the agent sees: its task, the access policy, the workspace files "
    "as it has left them, the visible tests and its steps so far. You cannot see the hidden "
    "tests. Answer the agent's question in a few sentences: name the file and function, the "
    "missing or wrong check, and how to confirm the fix with http_request or run_tests. Do not "
    "rewrite whole files."
)

_STEP_OUTPUT_CHARS = 1500
_FILE_CHARS = 12_000


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} characters cut)"


def _files(episode: Episode) -> dict[str, str]:
    files = {
        path: content.decode(errors="replace") for path, content in episode.bundle.workspace.items()
    }
    files.update(episode.overlay)
    return dict(sorted(files.items()))


def _visible_tests(episode: Episode) -> str:
    tests = [t.model_dump(mode="json") for t in episode.bundle.manifest.visible_tests]
    return json.dumps(tests, indent=1) if tests else "(this scenario has no visible tests)"


def _steps(episode: Episode, budget: int) -> str:
    """The most recent steps that fit in ``budget`` characters, oldest first."""
    chunks: list[str] = []
    used = 0
    for number, (action, output) in reversed(list(enumerate(episode.transcript, start=1))):
        chunk = (
            f"### step {number}\naction: {json.dumps(action, default=str)[:2000]}\n"
            f"observation:\n{_cut(output, _STEP_OUTPUT_CHARS)}"
        )
        if used + len(chunk) > budget:
            chunks.append(f"(… {number} earlier steps left out)")
            break
        chunks.append(chunk)
        used += len(chunk)
    return "\n\n".join(reversed(chunks)) if chunks else "(no steps yet)"


def expert_messages(episode: Episode, question: str, *, max_chars: int) -> list[dict[str, Any]]:
    """The chat to send for ``question`` asked in ``episode``.

    Args:
        episode: the running episode (its bundle's hidden part is never read).
        question: the agent's question, as asked.
        max_chars: bound on the user message's length.
    """
    head = (
        f"# The agent's question\n{question}\n\n# The task the agent was given\n{episode.briefing}"
    )
    tests = "# Visible tests (HTTP steps; {{kind:name}} are fixture placeholders)\n"
    tests += _visible_tests(episode)
    room = max(max_chars - len(head) - len(tests), 2000)
    steps = "# The episode so far\n" + _steps(episode, room * 2 // 5)
    room -= len(steps)
    parts = ["# Workspace files as the agent has left them"]
    for path, content in _files(episode).items():
        block = f"## {path}\n```\n{_cut(content, _FILE_CHARS)}\n```"
        if len(block) > room:
            parts.append(f"## {path}\n(left out: the prompt is full)")
            continue
        parts.append(block)
        room -= len(block)
    user = "\n\n".join([head, tests, "\n\n".join(parts), steps])
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
