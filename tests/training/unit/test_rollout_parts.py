"""The pure parts of the rollout path: row carriage, tool-call parsing, rendering, actions."""

from __future__ import annotations

import pytest

from a01gym.training import rollout, session, toolcalls


def test_a_row_survives_the_trip_through_the_dataset_prompt() -> None:
    row = {"seed": 7, "split": "train", "family": "F01", "scenario": "ab" * 32}
    assert rollout.row_from_prompt(rollout.row_prompt(row)) == row


def test_a_foreign_prompt_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="row_prompt"):
        rollout.row_from_prompt([{"role": "user", "content": "fix the bug"}])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',
            ("read_file", {"path": "a.py"}),
        ),
        ('thinking… <tool_call>{"name": "submit"}</tool_call><|im_end|>', ("submit", {})),
        # what Qwen2.5-Coder-0.5B wrote zero-shot: fenced JSON, no tags
        (
            'Let me look.\n```json\n{"name": "read_file", "arguments": {"path": "/app/main.py"}}'
            "\n```",
            ("read_file", {"path": "/app/main.py"}),
        ),
        ('{"name": "list_files", "arguments": {}}', ("list_files", {})),
        ('Sure: {"tool": "search", "pattern": "owner"} done', ("search", {"pattern": "owner"})),
        (
            '{"function": {"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}}',
            ("read_file", {"path": "a.py"}),
        ),
        # an unclosed tag (the turn ran out of tokens after a complete object) still counts
        ('<tool_call>\n{"name": "submit", "arguments": {}}', ("submit", {})),
    ],
)
def test_parse_tool_call_accepts_what_real_models_write(text, expected) -> None:
    assert toolcalls.parse_tool_call(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('<tool_call>{"name": "read_file", "arguments": {"path": "a.py"</tool_call>', "valid JSON"),
        ('<tool_call>{"name": 9}</tool_call>', '"name" string'),
        ('<tool_call>{"name": "x", "arguments": [1]}</tool_call>', "JSON object"),
        ('{"name": "x", "arguments": "not json"}', "string but not JSON"),
        ("no call at all", "no JSON object"),
        ("[1, 2]", "no JSON object"),
    ],
)
def test_parse_tool_call_says_why_a_reply_is_not_a_call(text, reason) -> None:
    with pytest.raises(ValueError, match=reason):
        toolcalls.parse_tool_call(text)


def test_tool_action_and_tool_call_are_inverse() -> None:
    action = {"tool": "http_request", "method": "POST", "path": "/n", "json": {"a": 1}}
    call = session.action_tool_call(action)
    assert call["function"]["arguments"]["json_body"] == {"a": 1}
    assert session.tool_action(call["function"]["name"], call["function"]["arguments"]) == action


def test_render_cuts_long_output_keeping_head_and_tail_and_names_errors() -> None:
    text = session.render_observation(
        {
            "output": "H" * 3000 + "T" * 1000,
            "error": {"code": "not_found", "message": "x"},
            "steps_left": 5,
            "phase": "explore",
        },
        max_chars=1000,
    )
    assert text.startswith("error (not_found): HHH")
    assert text.rstrip().endswith("TTT\n[5 steps left]".rstrip())
    assert "characters cut" in text
    assert len(text) < 1200


def test_tool_tokens_after_the_last_model_token_are_cut_from_the_tokens_only() -> None:
    r = rollout.Rollout(row={}, session=session.EpisodeSession("http://127.0.0.1:9"))
    r.completion_ids, r.env_mask = [1, 2, 3, 4, 5, 6, 7], [1, 1, 0, 0, 1, 0, 0]
    r.messages = [{"role": "tool", "name": "read_file", "content": "x"}]
    r.drop_trailing_tool_tokens()
    assert (r.completion_ids, r.env_mask) == ([1, 2, 3, 4, 5], [1, 1, 0, 0, 1])
    assert r.messages[-1]["role"] == "tool"  # the transcript keeps the observation
    r.drop_trailing_tool_tokens()
    assert r.completion_ids == [1, 2, 3, 4, 5]


def test_a_rollout_without_model_tokens_keeps_its_placeholder() -> None:
    r = rollout.Rollout(row={}, session=session.EpisodeSession("http://127.0.0.1:9"))
    r.completion_ids, r.env_mask = [9], [0]  # a failed reset: TRL needs one token
    r.drop_trailing_tool_tokens()
    assert (r.completion_ids, r.env_mask) == ([9], [0])
