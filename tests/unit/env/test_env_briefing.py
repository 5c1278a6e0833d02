"""The first observation: each fact once, the scenario's own words, real examples, no secrets."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from a01gym.env import briefing
from a01gym.factory import author, compiler, config, families
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.fixtures import CANARY_SHAPES

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"


def _bundle(family: str, index: int = 0) -> Bundle:
    cfg = config.FactoryConfig.model_validate({"count": index + 1, "families": [family]})
    return compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[index]))


def _examples(text: str) -> dict[str, dict[str, Any]]:
    actions = [
        json.loads(line.split("   # ")[0]) for line in text.splitlines() if line.startswith("{")
    ]
    return {a["tool"]: a for a in actions}


@pytest.fixture(scope="module", params=sorted(families.FAMILIES))
def compiled(request: pytest.FixtureRequest) -> Bundle:
    return _bundle(request.param)


def test_policy_and_actors_are_stated_once_in_the_scenarios_words(compiled: Bundle) -> None:
    text, _ = briefing.render(compiled)
    for line in compiled.manifest.policy.splitlines():
        assert text.count(line) == 1, line
    for actor in compiled.manifest.actors:
        assert len(re.findall(rf"^- `{actor.name}`:", text, re.MULTILINE)) == 1, actor.name
    assert text.count("## Access policy") == 1 and text.count("## Actors") == 1
    # the domain's own noun ("company", "workspace", ...), never a second word for it
    assert not re.findall(r"(?<![/\w])tenant(?![/.\w])", text)
    assert "Bearer" not in text  # credentials are sent for the agent, listed only in result


def test_tells_what_a_fair_grader_assumes(compiled: Bundle) -> None:
    text, _ = briefing.render(compiled)
    assert "one place or in several" in text
    assert "401, 403 or 404" in text
    assert "fresh copy of the app and its data" in text


def test_examples_use_the_scenarios_real_files_actors_and_paths(compiled: Bundle) -> None:
    text, _ = briefing.render(compiled)
    examples = _examples(text)
    assert set(examples) == {
        "list_files",
        "read_file",
        "search",
        "http_request",
        "edit_file",
        "write_file",
        "run_tests",
        "submit",
    }
    workspace = compiled.workspace
    for tool in ("read_file", "edit_file", "write_file"):
        assert examples[tool]["path"] in workspace
    folder = examples["search"]["path"] + "/"
    assert any(path.startswith(folder) for path in workspace)
    assert any(examples["search"]["pattern"].encode() in c for c in workspace.values())
    request = examples["http_request"]
    assert compiled.manifest.actor(request["actor"]) is not None
    assert request["actor"] != "anonymous" and "{{" not in request["path"]


def test_nothing_hidden_reaches_the_briefing(compiled: Bundle) -> None:
    text, result = briefing.render(compiled)
    everything = text + json.dumps(result)
    assert "CANARY" not in everything.upper()
    assert re.search(CANARY_SHAPES, everything) is None  # no seeded secret, of any world
    for test in compiled.hidden.tests:
        assert test.id not in everything
    for content in compiled.hidden.reference_fix.files.values():
        for line in (content or "").splitlines():
            if len(line.strip()) > 30 and line.encode() not in b"".join(
                compiled.workspace.values()
            ):
                assert line not in everything


def test_impersonation_reads_one_way_beside_a_support_actor() -> None:
    bundle = _bundle("F04", 3)
    assert any(a.role == "support" for a in bundle.manifest.actors)
    line = next(x for x in bundle.manifest.policy.splitlines() if "X-Act-As" in x)
    assert "support" not in line, line


def test_a_hand_written_task_gets_the_manifests_policy_and_actors_once() -> None:
    bundle = Bundle.load(FIXTURE)
    text, result = briefing.render(bundle)
    assert text.startswith(bundle.workspace["TASK.md"].decode().strip())
    assert text.count("## Access policy") == 1 and text.count("## Actors") == 1
    assert "- `anonymous`: no credentials" in text
    assert set(result) == {"task", "policy", "actors", "files", "tools", "budget", "scenario"}
    assert result["actors"][1]["headers"]["Authorization"].startswith("Bearer ")


def test_models_given_tool_schemas_see_every_section_but_the_wire_actions(
    compiled: Bundle,
) -> None:
    """The training paths show the task without the JSON-action section (the schemas carry the
    tools); nothing else of the briefing is lost or reordered."""
    text, _ = briefing.render(compiled)
    shown = briefing.without_wire_tools(text)
    assert briefing.TOOLS_HEADING in text
    assert briefing.TOOLS_HEADING not in shown
    assert '{"tool":"list_files"}' not in shown
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert [line for line in shown.splitlines() if line.startswith("## ")] == [
        h for h in headings if h != briefing.TOOLS_HEADING
    ]
    files, _, _ = text.partition(briefing.TOOLS_HEADING)
    assert shown.startswith(files.rstrip("\n"))
    assert shown.endswith(text[text.index("## Budget and grading") :])
    assert briefing.without_wire_tools(shown) == shown
