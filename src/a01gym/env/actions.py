"""The actions an agent may send: one model per tool, validated, and described for MCP.

:func:`parse_action` turns one JSON object into its action model (:mod:`a01gym.env.models`), or
into an error outcome naming the fix, so a malformed action is an observation, never an
exception. :func:`tool_specs` describes the same tools for MCP (name, description, input schema
derived from the action models), so ``tools/list`` and the ``/schema`` union never drift.
Running a valid action is :mod:`a01gym.env.tools`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from a01gym.env import models, tools

__all__ = ["format_validation_error", "parse_action", "tool_specs"]

_ACTION_MODELS: dict[str, type[BaseModel]] = {
    "list_files": models.ListFiles,
    "read_file": models.ReadFile,
    "search": models.Search,
    "http_request": models.HttpRequest,
    "edit_file": models.EditFile,
    "write_file": models.WriteFile,
    "run_tests": models.RunTests,
    "ask_expert": models.AskExpert,
    "submit": models.Submit,
}


def tool_specs() -> list[dict[str, Any]]:
    """MCP tool descriptions: ``name``, ``description`` and ``inputSchema`` (the MCP spec's
    spelling, which OpenEnv's clients read too) per tool."""
    specs = []
    for name, model in _ACTION_MODELS.items():
        schema = model.model_json_schema(by_alias=True)
        schema["properties"].pop("tool", None)
        schema["required"] = [r for r in schema.get("required", []) if r != "tool"]
        if not schema["required"]:
            schema.pop("required")
        schema.pop("title", None)
        description = (model.__doc__ or name).strip()
        specs.append({"name": name, "description": description, "inputSchema": schema})
    return specs


def format_validation_error(exc: ValidationError) -> str:
    """Pydantic errors in one short line per problem, naming the field."""
    parts = []
    for error in exc.errors()[:8]:
        loc = ".".join(str(p) for p in error["loc"][1:] or error["loc"]) or "(action)"
        parts.append(f"{loc}: {error['msg']}")
    return "; ".join(parts)


def parse_action(data: Any) -> tuple[BaseModel | None, tools.ToolOutcome | None]:
    """Validate one action object; an invalid one becomes an error outcome naming the fix."""
    if not isinstance(data, dict):
        return None, tools.ToolOutcome.fail(
            models.ErrorCode.INVALID_ACTION,
            f"an action is a JSON object with a 'tool' field, got {type(data).__name__}",
        )
    tool = data.get("tool")
    if tool not in _ACTION_MODELS:
        known = ", ".join(_ACTION_MODELS)
        if tool is None:
            return None, tools.ToolOutcome.fail(
                models.ErrorCode.INVALID_ACTION, f"missing 'tool'; one of: {known}"
            )
        return None, tools.ToolOutcome.fail(
            models.ErrorCode.UNKNOWN_TOOL, f"unknown tool {str(tool)[:64]!r}; one of: {known}"
        )
    try:
        return _ACTION_MODELS[tool].model_validate(data), None
    except ValidationError as exc:
        return None, tools.ToolOutcome.fail(
            models.ErrorCode.INVALID_ACTION,
            f"bad arguments for {tool}: {format_validation_error(exc)}",
        )
