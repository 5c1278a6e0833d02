"""``a01gym play`` commands: each short command becomes exactly one agent action."""

from __future__ import annotations

import pytest

from a01gym.training.commands import Command, CommandError, parse_command


def _no_questions(label: str, multiline: bool) -> str:
    raise AssertionError(f"unexpected prompt {label!r}")


@pytest.mark.parametrize(
    ("line", "action"),
    [
        ("ls", {"tool": "list_files"}),
        ("read app/main.py", {"tool": "read_file", "path": "app/main.py"}),
        (
            "read app/main.py 5 9",
            {"tool": "read_file", "path": "app/main.py", "start_line": 5, "end_line": 9},
        ),
        ('search "owner_id ==" app', {"tool": "search", "pattern": "owner_id ==", "path": "app"}),
        (
            "get /notes/3 as bob",
            {"tool": "http_request", "method": "GET", "path": "/notes/3", "actor": "bob"},
        ),
        ("DELETE /notes/3", {"tool": "http_request", "method": "DELETE", "path": "/notes/3"}),
        (
            'post /notes as alice {"title": "a b", "body": "x"}',
            {
                "tool": "http_request",
                "method": "POST",
                "path": "/notes",
                "actor": "alice",
                "json": {"title": "a b", "body": "x"},
            },
        ),
        (
            "patch /notes/1 [1, 2]",
            {"tool": "http_request", "method": "PATCH", "path": "/notes/1", "json": [1, 2]},
        ),
        ("test", {"tool": "run_tests"}),
        ("submit", {"tool": "submit"}),
        ('{"tool": "read_file", "path": "TASK.md"}', {"tool": "read_file", "path": "TASK.md"}),
    ],
)
def test_commands_become_actions(line: str, action: dict) -> None:
    assert parse_command(line, _no_questions) == Command("action", action)


def test_edit_and_write_ask_for_their_text() -> None:
    old_label = "old text (exact; unique, or starting on LINE)"
    answers = {"path": "app/db.py", old_label: "a\nb", "new text": "c"}
    asked: list[tuple[str, bool]] = []

    def ask(label: str, multiline: bool) -> str:
        asked.append((label, multiline))
        return answers.get(label, "print(1)")

    edit = parse_command("edit", ask)
    assert edit.action == {"tool": "edit_file", "path": "app/db.py", "old": "a\nb", "new": "c"}
    assert asked[0] == ("path", False) and asked[1][1] is True
    chosen = parse_command("edit app/db.py 12", ask)
    assert chosen.action == {**edit.action, "line": 12}
    with pytest.raises(CommandError, match="usage: edit"):
        parse_command("edit app/db.py twelve", ask)
    write = parse_command("write app/new.py", ask)
    assert write.action == {"tool": "write_file", "path": "app/new.py", "content": "print(1)\n"}


@pytest.mark.parametrize(("line", "kind"), [("help", "help"), ("?", "help"), ("quit", "quit")])
def test_help_and_quit_send_nothing(line: str, kind: str) -> None:
    assert parse_command(line, _no_questions) == Command(kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("frobnicate", "unknown command 'frobnicate'"),
        ("read", "usage: read PATH"),
        ("read app/main.py ten", "start line must be a line number"),
        ("get", "usage: get PATH"),
        ("get /notes as", "'as' needs an actor"),
        ("post /notes {bad", "the body is not valid JSON"),
        ('{"tool": ', "not valid JSON"),
        ("[1]", "unknown command"),
        ('search "unclosed', "cannot split"),
        ("write", "usage: write PATH"),
    ],
)
def test_bad_lines_say_what_to_type(line: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_command(line, _no_questions)


def test_ask_sends_the_question_to_the_expert() -> None:
    command = parse_command("ask which route misses its check?", lambda label, multi: "")
    assert command.action == {"tool": "ask_expert", "question": "which route misses its check?"}
    with pytest.raises(CommandError, match="usage: ask"):
        parse_command("ask   ", lambda label, multi: "")
