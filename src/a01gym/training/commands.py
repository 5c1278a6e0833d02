"""Short commands a person types in ``a01gym play``, turned into the agent's JSON actions.

A person should feel the task an agent gets, with the same tools and the same budget, without
writing JSON for every step. Each command maps to exactly one action; the gateway validates
it, so a bad argument comes back as the same error observation an agent would see. Raw JSON
(``{"tool": ...}``) passes through unchanged. Commands that need long text (``edit``,
``write``) ask for it through ``ask``, so the parser has no terminal of its own and tests can
drive it directly.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["HELP", "METHODS", "Command", "CommandError", "parse_command"]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

HELP = """\
ls                              list the workspace's files
read PATH [START [END]]         read a file (optionally lines START..END)
search PATTERN [PATH]           search for a fixed string (quote it if it has spaces)
get PATH [as ACTOR]             send a request as an actor (default: anonymous); any method:
post PATH [as ACTOR] [JSON]     get, post, put, patch, delete, head, options; JSON is the body
edit [PATH [LINE]]              replace exact text in a file (asks; LINE: which one, if repeated)
write PATH                      create or overwrite a file (asks for the content)
test                            run the visible tests
ask QUESTION                    ask the expert (only in episodes that offer it)
submit                          end the episode and get the hidden grade
{"tool": ...}                   any raw JSON action
help                            this text;  quit: leave without submitting
Multi-line answers end with a line holding a single '.'."""

Ask = Callable[[str, bool], str]
"""``ask(label, multiline)``: the person's answer to a prompt."""


class CommandError(ValueError):
    """The line is not a command; the message says what to type instead."""


@dataclasses.dataclass(frozen=True)
class Command:
    """What a line asks for: an action to send, the help text, or leaving."""

    kind: Literal["action", "help", "quit"]
    action: dict[str, Any] | None = None


def _raw(line: str) -> Command:
    try:
        action = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CommandError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(action, dict):
        raise CommandError('a raw action is a JSON object such as {"tool": "list_files"}')
    return Command("action", action)


def _http(method: str, rest: str) -> Command:
    words = rest.split(maxsplit=1)
    if not words:
        raise CommandError(f"usage: {method.lower()} PATH [as ACTOR] [JSON]")
    path, rest = words[0], (words[1] if len(words) > 1 else "")
    action: dict[str, Any] = {"tool": "http_request", "method": method, "path": path}
    words = rest.split(maxsplit=2)
    if words and words[0] == "as":
        if len(words) < 2:
            raise CommandError("'as' needs an actor name, e.g. get /notes/1 as alice")
        action["actor"] = words[1]
        rest = words[2] if len(words) > 2 else ""
    if rest.strip():
        try:
            action["json"] = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise CommandError(f"the body is not valid JSON: {exc.msg}") from None
    return Command("action", action)


def _read(args: list[str]) -> Command:
    if not 1 <= len(args) <= 3:
        raise CommandError("usage: read PATH [START [END]]")
    action: dict[str, Any] = {"tool": "read_file", "path": args[0]}
    for key, value in zip(("start_line", "end_line"), args[1:], strict=False):
        if not value.isdigit():
            raise CommandError(f"{key.replace('_', ' ')} must be a line number, got {value!r}")
        action[key] = int(value)
    return Command("action", action)


def parse_command(line: str, ask: Ask) -> Command:
    """The :class:`Command` a typed line asks for.

    Args:
        line: what the person typed.
        ask: gets further input for ``edit`` and ``write``.

    Raises:
        CommandError: naming the right usage; the session goes on.
    """
    line = line.strip()
    if line.startswith("{"):
        return _raw(line)
    head, _, rest = line.partition(" ")
    verb = head.lower()
    if verb.upper() in METHODS:
        return _http(verb.upper(), rest)
    try:
        args = shlex.split(rest)
    except ValueError as exc:
        raise CommandError(f"cannot split the arguments: {exc}") from None
    if verb in ("help", "?", "h"):
        return Command("help")
    if verb in ("quit", "exit", "q"):
        return Command("quit")
    if verb in ("ls", "list", "files"):
        return Command("action", {"tool": "list_files"})
    if verb in ("read", "cat"):
        return _read(args)
    if verb in ("search", "grep"):
        if not 1 <= len(args) <= 2:
            raise CommandError("usage: search PATTERN [PATH]  (quote a pattern with spaces)")
        action: dict[str, Any] = {"tool": "search", "pattern": args[0]}
        if len(args) == 2:
            action["path"] = args[1]
        return Command("action", action)
    if verb == "edit":
        if len(args) > 2 or (len(args) == 2 and not args[1].isdigit()):
            raise CommandError("usage: edit [PATH [LINE]]  (LINE: where `old` starts, if repeated)")
        path = args[0] if args else ask("path", False)
        old = ask("old text (exact; unique, or starting on LINE)", True)
        new = ask("new text", True)
        edit: dict[str, Any] = {"tool": "edit_file", "path": path, "old": old, "new": new}
        if len(args) == 2:
            edit["line"] = int(args[1])
        return Command("action", edit)
    if verb == "write":
        if len(args) != 1:
            raise CommandError("usage: write PATH  (then type the content)")
        content = ask("content", True)
        if content and not content.endswith("\n"):
            content += "\n"
        return Command("action", {"tool": "write_file", "path": args[0], "content": content})
    if verb in ("test", "tests"):
        return Command("action", {"tool": "run_tests"})
    if verb == "ask":
        if not rest.strip():
            raise CommandError("usage: ask QUESTION  (e.g. ask which route misses its check?)")
        return Command("action", {"tool": "ask_expert", "question": rest.strip()})
    if verb == "submit":
        return Command("action", {"tool": "submit"})
    raise CommandError(f"unknown command {head!r}; type help for the list")
