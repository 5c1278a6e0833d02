"""The first observation: the task in the scenario's own words, then what only the episode knows.

``TASK.md`` (written by the factory's compiler, or by hand) already states the task, the
access policy and the actors in the scenario's vocabulary ("company", "workspace", …), so the
briefing shows it once, as written, and adds only what it lacks: the policy or actors when a
hand-written ``TASK.md`` leaves them out, the file list, tool examples built from this
scenario's real files, actors and paths, and how the episode is graded. It never reads the
hidden part of the bundle: every example comes from the workspace and the manifest's visible
tests, rendered in the agent's own (visible) world.

:func:`render` returns the text for an LLM and the same content structured;
:mod:`a01gym.env.environment` sends both on reset.
"""

from __future__ import annotations

import json
from typing import Any

from a01gym.env import models
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.fixtures import FixtureValues
from a01gym.scenario.manifest import Manifest

__all__ = ["TOOLS_HEADING", "render", "without_wire_tools"]

_GRADING = (
    'Send {"tool":"submit"} when the fix is done; no step before it shows a score. '
    "Hidden tests then check your files on a fresh copy of the app and its data, with new "
    "ids, users and tokens, so records your probes created or changed do not matter. Any "
    "refusal (401, 403 or 404) counts as blocking unless the policy names a status."
)
"""How grading works: what a fair grader assumes and the agent cannot otherwise know."""

_SEARCH_EXAMPLES = ("owner_id", "tenant_id", "Depends(", "def ")
TOOLS_HEADING = "## Tools (one JSON object per step)"


def without_wire_tools(output: str) -> str:
    """The first observation's text without its section on the wire's JSON actions.

    For a model given the tools as schemas through its chat template (the training paths):
    that section teaches a second call format (``{"tool": ...}``, ``json`` for a body) beside
    the schemas' (``<tool_call>``, ``json_body``), and costs ~250 tokens of a ~2.3k-token
    prompt, while the schemas carry every tool and argument it names.
    """
    head, found, rest = output.partition(TOOLS_HEADING)
    if not found:
        return output
    _, next_heading, tail = rest.partition("\n## ")
    return head.rstrip("\n") + ("\n\n## " + tail if next_heading else "\n")


def _compact(action: dict[str, Any]) -> str:
    return json.dumps(action, separators=(",", ":"))


def _entry_file(bundle: Bundle) -> str:
    """The entrypoint's module file (``app.main:app`` → ``app/main.py``), else any .py file."""
    module = bundle.manifest.entrypoint.partition(":")[0]
    for path in (module.replace(".", "/") + ".py", module.replace(".", "/") + "/__init__.py"):
        if path in bundle.workspace:
            return path
    python = sorted(p for p in bundle.workspace if p.endswith(".py"))
    return python[0] if python else sorted(bundle.workspace)[0]


def _example_request(manifest: Manifest, world: FixtureValues) -> dict[str, Any]:
    """A GET a signed-in actor makes in a visible test, with ids of the agent's world.

    Never a step of the visible exploit reproduction (hint level 4): the example is the same
    kind of request in every scenario, not a pointer at the bug's route.
    """
    steps = [
        s
        for t in manifest.visible_tests
        if not t.id.startswith("visible.exploit")
        for s in t.steps
        if s.method == "GET"
    ]
    steps.sort(key=lambda s: (s.actor == "anonymous", "{{" not in s.path))
    if steps:
        step = steps[0]
        return {"method": "GET", "path": world.render(step.path), "actor": step.actor}
    named = [a.name for a in manifest.actors if a.role != "anonymous"]
    return {"method": "GET", "path": "/", "actor": named[0] if named else "anonymous"}


def _tools(bundle: Bundle, world: FixtureValues) -> str:
    path = _entry_file(bundle)
    folder = path.rpartition("/")[0]
    text = "\n".join(c.decode(errors="replace") for c in bundle.workspace.values())
    pattern = next((p for p in _SEARCH_EXAMPLES if p in text), "import")
    request = {"tool": "http_request", **_example_request(bundle.manifest, world)}
    search: dict[str, Any] = {"tool": "search", "pattern": pattern}
    if folder:
        search["path"] = folder
    rows = [
        (_compact({"tool": "list_files"}), ""),
        (_compact({"tool": "read_file", "path": path, "start_line": 1, "end_line": 80}), ""),
        (_compact(search), 'a fixed string; optional: "ignore_case", "regex"'),
        (
            _compact(request),
            'optional: "headers", "query", "json" (a JSON body), "auth": "cookie" (the '
            "actor's session as a browser's cookie)",
        ),
        (
            _compact({"tool": "edit_file", "path": path, "old": "<exact text>", "new": "<new>"}),
            "old must occur exactly once",
        ),
        (_compact({"tool": "write_file", "path": path, "content": "<whole file>"}), ""),
        (_compact({"tool": "run_tests"}), "the visible tests"),
        (_compact({"tool": "submit"}), "ends the episode"),
    ]
    lines = [f"{action}   # {note}" if note else action for action, note in rows]
    return "\n".join(lines)


def _actor_infos(manifest: Manifest, world: FixtureValues) -> list[models.ActorInfo]:
    actors = [
        models.ActorInfo(
            name=a.name,
            role=a.role,
            tenant=a.tenant,
            description=a.description,
            headers=world.render(a.headers),
        )
        for a in manifest.actors
    ]
    if not any(a.name == "anonymous" for a in actors):
        actors.insert(
            0, models.ActorInfo(name="anonymous", role="anonymous", description="no credentials")
        )
    return actors


def _missing_sections(task: str, manifest: Manifest, actors: list[models.ActorInfo]) -> list[str]:
    """The policy and actors, only when ``TASK.md`` does not already state them."""
    sections = []
    policy = [line.strip() for line in manifest.policy.splitlines() if line.strip()]
    if policy and not all(line in task for line in policy):
        sections.append("## Access policy\n" + "\n".join(f"- {line}" for line in policy))
    if not all(f"`{a.name}`" in task for a in actors):
        lines = []
        for a in actors:
            facts = [] if a.role == "anonymous" else [a.role]
            facts += [a.tenant] if a.tenant else []
            if a.description.rstrip(".").lower() not in ("", a.role):
                facts.append(a.description)
            lines.append(f"- `{a.name}`: {', '.join(facts)}")
        lines.append("`http_request` sends an actor's credentials when you name it in `actor`.")
        sections.append("## Actors\n" + "\n".join(lines))
    return sections


def render(bundle: Bundle, *, expert_section: str = "") -> tuple[str, dict[str, Any]]:
    """The first observation's ``output`` and ``result`` for ``bundle``.

    Args:
        bundle: the episode's scenario.
        expert_section: the text offering ``ask_expert`` when the episode does (its tool is
            listed only then).
    """
    manifest = bundle.manifest
    world = FixtureValues(manifest.visible_seed, bundle.hidden.fixture.tables)
    actors = _actor_infos(manifest, world)
    files = [{"path": p, "size": len(c)} for p, c in sorted(bundle.workspace.items())]
    task = bundle.workspace.get("TASK.md", b"").decode(errors="replace").strip()
    budget = manifest.budget
    text = "\n\n".join(
        [
            task or f"# {manifest.title or manifest.name}",
            *_missing_sections(task, manifest, actors),
            "## Files\n" + "\n".join(f"{f['path']} ({f['size']} bytes)" for f in files),
            TOOLS_HEADING + "\n" + _tools(bundle, world),
            f"## Budget and grading\n{budget.max_steps} steps; each file write up to "
            f"{budget.max_write_bytes} bytes; the app restarts after every edit or write. "
            + _GRADING,
            *([expert_section] if expert_section else []),
        ]
    )
    result = {
        "task": task,
        "policy": manifest.policy,
        "actors": [a.model_dump() for a in actors],
        "files": files,
        "tools": [t for t in models.TOOL_NAMES if expert_section or t != "ask_expert"],
        "budget": {"max_steps": budget.max_steps, "max_write_bytes": budget.max_write_bytes},
        "scenario": manifest.content_hash,
    }
    return text, result
