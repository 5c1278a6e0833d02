"""The action union and tool descriptions: what a trainer may send, and what it gets told."""

from __future__ import annotations

import pytest

from a01gym.env import actions, models


@pytest.mark.parametrize(
    "action",
    [
        {"tool": "list_files"},
        {"tool": "read_file", "path": "app/main.py", "start_line": 1, "end_line": 5},
        {"tool": "search", "pattern": "owner_id"},
        {"tool": "http_request", "method": "POST", "path": "/notes", "json": {"a": 1}},
        {"tool": "edit_file", "path": "a.py", "old": "x", "new": "y"},
        {"tool": "write_file", "path": "a.py", "content": ""},
        {"tool": "run_tests"},
        {"tool": "submit"},
    ],
)
def test_every_documented_action_parses(action: dict[str, object]) -> None:
    parsed, failure = actions.parse_action(action)
    assert failure is None
    assert parsed is not None and parsed.tool == action["tool"]  # type: ignore[attr-defined]


def test_http_request_defaults_to_anonymous_actor() -> None:
    parsed, _ = actions.parse_action({"tool": "http_request", "method": "GET", "path": "/"})
    assert isinstance(parsed, models.HttpRequest)
    assert parsed.actor == "anonymous"


@pytest.mark.parametrize(
    ("action", "code", "needle"),
    [
        ({"tool": "rm_rf"}, models.ErrorCode.UNKNOWN_TOOL, "unknown tool 'rm_rf'"),
        ({"path": "x"}, models.ErrorCode.INVALID_ACTION, "missing 'tool'"),
        ({"tool": "read_file"}, models.ErrorCode.INVALID_ACTION, "path: Field required"),
        ({"tool": "submit", "force": True}, models.ErrorCode.INVALID_ACTION, "force"),
        (
            {"tool": "http_request", "method": "GET", "path": "no-slash"},
            models.ErrorCode.INVALID_ACTION,
            "path",
        ),
        (["tool", "submit"], models.ErrorCode.INVALID_ACTION, "JSON object"),
        (
            {"tool": "edit_file", "path": "a", "old": "", "new": "b"},
            models.ErrorCode.INVALID_ACTION,
            "old",
        ),
    ],
)
def test_invalid_actions_become_error_outcomes_naming_the_problem(
    action: object, code: models.ErrorCode, needle: str
) -> None:
    parsed, failure = actions.parse_action(action)
    assert parsed is None and failure is not None and failure.error is not None
    assert failure.error.code is code
    assert needle in failure.error.message


def test_tool_specs_match_the_action_union() -> None:
    specs = {spec["name"]: spec for spec in actions.tool_specs()}
    assert tuple(specs) == models.TOOL_NAMES
    assert set(specs["read_file"]["inputSchema"]["properties"]) == {
        "path",
        "start_line",
        "end_line",
    }
    assert all(set(spec) == {"name", "description", "inputSchema"} for spec in specs.values())
    assert specs["read_file"]["inputSchema"]["required"] == ["path"]
    assert "tool" not in specs["submit"]["inputSchema"]["properties"]
    assert "json" in specs["http_request"]["inputSchema"]["properties"]
    reserved = {"reset", "step", "state", "close"}
    assert not reserved & set(specs)


def test_observation_schema_has_no_reward_field_outside_the_breakdown() -> None:
    fields = set(models.A01Observation.model_fields)
    assert fields == {
        "tool",
        "output",
        "result",
        "error",
        "phase",
        "steps_left",
        "reward_breakdown",
        "metadata",
    }
