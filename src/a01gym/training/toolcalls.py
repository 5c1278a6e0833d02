"""Reading a tool call out of what a real model writes.

Small models do not all follow their chat template's tool format. Measured on the packaged
models (``bench/zeroshot.py``): Qwen2.5-Coder-0.5B-Instruct, given tools through its template,
answers with ``{"name": ..., "arguments": ...}`` inside a fenced ``json`` block far more often
than inside its own ``<tool_call>`` tags, and an OpenAI-compatible server (``transformers
serve``) returns that text in ``content`` with ``tool_calls`` empty. So one parser, used by the
rollout path and the OpenAI agent alike, accepts, in this order of preference:

1. ``<tool_call>{...}</tool_call>`` (Qwen, Hermes and most tool-trained templates);
2. a fenced code block holding one JSON object;
3. the first bare JSON object in the text.

and, inside it, any of the three shapes models use: ``{"name", "arguments"}`` (arguments may be
a JSON string, as in OpenAI's wire format), ``{"function": {"name", "arguments"}}``, or our own
action form ``{"tool": name, ...arguments}``. Anything else raises ``ValueError`` with the
reason, which the episode reports to the model as an invalid action.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_tool_call"]

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.DOTALL)


def _objects(text: str) -> list[str]:
    """Candidate JSON texts, most explicit format first."""
    tagged = [m.group(1) for m in _TAGGED.finditer(text)]
    if tagged:
        return tagged
    fenced = [m.group(1) for m in _FENCED.finditer(text)]
    return fenced or [text]


def _first_object(candidate: str) -> Any:
    start = candidate.find("{")
    if start < 0:
        raise ValueError("no JSON object found in the reply")
    try:
        value, _ = json.JSONDecoder().raw_decode(candidate[start:])
    except ValueError as exc:
        raise ValueError(f"the tool call is not valid JSON: {exc}") from exc
    return value


def _call(value: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise ValueError("the tool call must be a JSON object")
    if isinstance(value.get("function"), dict):
        value = value["function"]
    if "tool" in value and "name" not in value:
        name = value["tool"]
        arguments: Any = {k: v for k, v in value.items() if k != "tool"}
    else:
        name = value.get("name")
        arguments = value.get("arguments", value.get("parameters")) or {}
    if not isinstance(name, str) or not name:
        raise ValueError('the tool call needs a "name" string')
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise ValueError(f'"arguments" is a string but not JSON: {exc}') from exc
    if not isinstance(arguments, dict):
        raise ValueError('"arguments" must be a JSON object')
    return name, arguments


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]]:
    """The first tool call in a model reply, as (tool name, arguments).

    Raises:
        ValueError: saying what is wrong (no JSON, bad JSON, wrong shape), for the model to read.
    """
    error: ValueError | None = None
    for candidate in _objects(text):
        try:
            return _call(_first_object(candidate))
        except ValueError as exc:
            error = error or exc
    raise error or ValueError("no tool call found in the reply")
