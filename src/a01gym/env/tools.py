"""The agent's tools: validate one action, run it in the episode's sandbox, describe the result.

Each tool turns into calls on the sandbox's :class:`~a01gym.sandbox.host.client.SupervisorClient`
and returns a :class:`ToolOutcome`: text for an LLM, the same content structured, and an
error code when the action could not do what was asked. Agent mistakes (bad paths, a
non-unique edit, an unknown actor) are outcomes, never exceptions; only a sandbox failure
(:class:`~a01gym.errors.SandboxError`) propagates, so the environment can recover or end the
episode. ``submit`` is not run here: it is the environment's terminal step, and ``ask_expert``
is answered on the gateway's side by :mod:`a01gym.env.experttool`.

What an agent may send, and how it is validated into one of these actions (or an error
outcome) and described for MCP, is :mod:`a01gym.env.actions`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from a01gym.env import models
from a01gym.grading import runner, verdicts
from a01gym.sandbox import protocol
from a01gym.sandbox.host.client import ControlError, SupervisorClient
from a01gym.scenario.bundle import Bundle, safe_relative_path
from a01gym.scenario.fixtures import FixtureValues

__all__ = [
    "INVALID_CODES",
    "ToolContext",
    "ToolOutcome",
    "execute",
    "seed_visible_world",
]

MAX_READ_LINES = 600
MAX_OUTPUT_BODY = 6000
MAX_SEARCH_SHOWN = 100
APP_REQUEST_TIMEOUT_S = 10.0

INVALID_CODES = frozenset(
    {
        models.ErrorCode.INVALID_ACTION,
        models.ErrorCode.UNKNOWN_TOOL,
        models.ErrorCode.PATH_INVALID,
        models.ErrorCode.NOT_FOUND,
        models.ErrorCode.NOT_TEXT,
        models.ErrorCode.TOO_LARGE,
        models.ErrorCode.EDIT_NOT_FOUND,
        models.ErrorCode.EDIT_NOT_UNIQUE,
        models.ErrorCode.UNKNOWN_ACTOR,
        models.ErrorCode.BAD_REQUEST,
    }
)
"""Error codes that count as invalid actions for the reward penalty."""

_CONTROL_CODES = {
    protocol.ErrorCode.PATH_INVALID: models.ErrorCode.PATH_INVALID,
    protocol.ErrorCode.NOT_FOUND: models.ErrorCode.NOT_FOUND,
    protocol.ErrorCode.TOO_LARGE: models.ErrorCode.TOO_LARGE,
    protocol.ErrorCode.EDIT_NOT_FOUND: models.ErrorCode.EDIT_NOT_FOUND,
    protocol.ErrorCode.EDIT_NOT_UNIQUE: models.ErrorCode.EDIT_NOT_UNIQUE,
    protocol.ErrorCode.NOT_TEXT: models.ErrorCode.NOT_TEXT,
    protocol.ErrorCode.APP_START_FAILED: models.ErrorCode.APP_START_FAILED,
    protocol.ErrorCode.APP_NOT_RUNNING: models.ErrorCode.APP_NOT_RUNNING,
    protocol.ErrorCode.APP_TIMEOUT: models.ErrorCode.APP_TIMEOUT,
    protocol.ErrorCode.UNKNOWN_ACTOR: models.ErrorCode.UNKNOWN_ACTOR,
    protocol.ErrorCode.BAD_REQUEST: models.ErrorCode.BAD_REQUEST,
}


@dataclasses.dataclass
class ToolOutcome:
    """What one tool did: text, structure, and an error when it did not do what was asked."""

    output: str
    result: Any = None
    error: models.ErrorInfo | None = None
    changed_files: bool = False

    @classmethod
    def fail(cls, code: models.ErrorCode, message: str, result: Any = None) -> ToolOutcome:
        return cls(
            f"error ({code}): {message}", result, models.ErrorInfo(code=code, message=message)
        )


@dataclasses.dataclass(frozen=True)
class ToolContext:
    """What tools need to know about the episode besides the sandbox.

    ``files`` answers ``read_file`` on this side, with no round trip to the sandbox: the
    workspace is the bundle's plus the agent's own writes (the episode's overlay), since the
    agent's tools are its only writers. Without it, the sandbox is asked.
    """

    bundle: Bundle
    max_write_bytes: int
    files: Callable[[str], bytes | None] | None = None
    max_read_bytes: int = 256 * 1024


async def seed_visible_world(client: SupervisorClient, bundle: Bundle) -> None:
    """Seed the database with the agent's world (the bundle's fixed ``visible_seed``)."""
    world = FixtureValues(bundle.manifest.visible_seed, bundle.hidden.fixture.tables)
    await client.seed(
        protocol.SeedRequest(
            tables=world.render(bundle.hidden.fixture.tables),
            actors=runner.render_actors(bundle.manifest, world),
        )
    )


def _control_failure(exc: ControlError) -> ToolOutcome:
    code = _CONTROL_CODES.get(exc.code, models.ErrorCode.BAD_REQUEST)
    return ToolOutcome.fail(code, exc.message)


async def execute(action: BaseModel, client: SupervisorClient, ctx: ToolContext) -> ToolOutcome:
    """Run one (non-submit) action.

    Raises:
        SandboxError: only when the sandbox itself failed.
    """
    try:
        match action:
            case models.ListFiles():
                return await _list_files(client)
            case models.ReadFile():
                return await _read_file(client, action, ctx)
            case models.Search():
                return await _search(client, action)
            case models.HttpRequest():
                return await _http_request(client, action, ctx)
            case models.EditFile() | models.WriteFile():
                return await _change(client, action, ctx)
            case models.RunTests():
                return await _run_tests(client, ctx)
    except ControlError as exc:
        return _control_failure(exc)
    raise TypeError(f"not a tool action: {type(action).__name__}")


def _check_path(path: str) -> ToolOutcome | None:
    try:
        safe_relative_path(path)
    except ValueError as exc:
        return ToolOutcome.fail(models.ErrorCode.PATH_INVALID, str(exc))
    return None


async def _list_files(client: SupervisorClient) -> ToolOutcome:
    files = await client.list_files()
    lines = [f"{f.path}  ({f.size} bytes)" for f in files]
    return ToolOutcome(
        f"{len(files)} files:\n" + "\n".join(lines),
        {"files": [f.model_dump() for f in files]},
    )


def _text(ctx: ToolContext, path: str) -> str:
    """The file's text, with the sandbox's own checks and errors (``Workspace.read``).

    Raises:
        ControlError: not found, too large, not UTF-8.
    """
    assert ctx.files is not None
    data = ctx.files(path)
    if data is None:
        raise ControlError(
            protocol.ErrorCode.NOT_FOUND, f"no file {path!r}; list_files shows what exists"
        )
    if len(data) > ctx.max_read_bytes:
        raise ControlError(
            protocol.ErrorCode.TOO_LARGE, f"{path!r} is larger than {ctx.max_read_bytes} bytes"
        )
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ControlError(protocol.ErrorCode.NOT_TEXT, f"{path!r} is not UTF-8 text") from None


async def _read_file(
    client: SupervisorClient, action: models.ReadFile, ctx: ToolContext
) -> ToolOutcome:
    if (bad := _check_path(action.path)) is not None:
        return bad
    if action.start_line and action.end_line and action.end_line < action.start_line:
        return ToolOutcome.fail(models.ErrorCode.INVALID_ACTION, "end_line is before start_line")
    if ctx.files is not None:
        content = _text(ctx, action.path)
    else:
        content = await client.read_file(action.path)
    lines = content.splitlines()
    if action.start_line and action.start_line > max(len(lines), 1):
        return ToolOutcome.fail(
            models.ErrorCode.INVALID_ACTION,
            f"start_line {action.start_line} is past the end of {action.path} "
            f"({len(lines)} lines); read with start_line at most {max(len(lines), 1)}",
        )
    start = (action.start_line or 1) - 1
    end = min(action.end_line or len(lines), len(lines), start + MAX_READ_LINES)
    shown = lines[start:end]
    numbered = "\n".join(f"{n:>5}  {text}" for n, text in enumerate(shown, start=start + 1))
    note = ""
    if end < len(lines):
        note = f"\n… {len(lines) - end} more lines; read with start_line={end + 1}"
    header = f"{action.path} (lines {start + 1}-{end} of {len(lines)}):\n" if lines else ""
    return ToolOutcome(
        (header + numbered + note) if lines else f"{action.path} is empty",
        {
            "path": action.path,
            "start_line": start + 1,
            "end_line": end,
            "total_lines": len(lines),
            "content": "\n".join(shown),
        },
    )


async def _search(client: SupervisorClient, action: models.Search) -> ToolOutcome:
    if action.path not in (None, "", ".") and (bad := _check_path(action.path)) is not None:
        return bad
    matches = await client.search(
        action.pattern, action.path or None, ignore_case=action.ignore_case, regex=action.regex
    )
    lines = [f"{m.path}:{m.line}: {m.text}" for m in matches[:MAX_SEARCH_SHOWN]]
    more = len(matches) - len(lines)
    text = f"{len(matches)} matches for {action.pattern!r}" + (":\n" if matches else "")
    text += "\n".join(lines) + (f"\n… {more} more" if more > 0 else "")
    return ToolOutcome(text, {"matches": [m.model_dump() for m in matches]})


async def _http_request(
    client: SupervisorClient, action: models.HttpRequest, ctx: ToolContext
) -> ToolOutcome:
    if ctx.bundle.manifest.actor(action.actor) is None:
        known = ", ".join(["anonymous", *(a.name for a in ctx.bundle.manifest.actors)])
        return ToolOutcome.fail(
            models.ErrorCode.UNKNOWN_ACTOR, f"unknown actor {action.actor!r}; one of: {known}"
        )
    as_browser = action.auth == "cookie" and action.actor != "anonymous"
    actor, headers = action.actor, action.headers
    if as_browser:
        actor, headers = "anonymous", _as_browser(ctx.bundle, action.actor, headers)
    response = await client.request(
        protocol.ProxyRequest(
            method=action.method,
            path=action.path,
            actor=actor,
            headers=headers,
            query=action.query,
            json=action.json_body,
            body=action.body,
            timeout_s=APP_REQUEST_TIMEOUT_S,
        )
    )
    body = response.body
    shown = body[:MAX_OUTPUT_BODY]
    via = " (session cookie)" if as_browser else ""
    cut = len(body) > MAX_OUTPUT_BODY or response.truncated
    headers = "\n".join(f"{k}: {v}" for k, v in sorted(response.headers.items()))
    text = (
        f"{action.method} {action.path} as {action.actor}{via} -> HTTP {response.status}\n"
        f"{headers}\n\n{shown}" + ("\n… (body truncated)" if cut else "")
    )
    if response.app_log:
        text += f"\n\nThe app logged:\n{response.app_log}"
    return ToolOutcome(
        text,
        {
            "status": response.status,
            "headers": response.headers,
            "body": shown,
            "truncated": cut,
            "elapsed_ms": round(response.elapsed_ms, 3),
            "app_log": response.app_log,
        },
    )


def _as_browser(bundle: Bundle, actor: str, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` plus ``actor``'s session as the ``session`` cookie, the way the actor's
    browser sends it to cookie-authenticated pages (the bearer token is the same session),
    after any cookies the agent set itself (a ``csrf_token`` it read from a page)."""
    world = FixtureValues(bundle.manifest.visible_seed, bundle.hidden.fixture.tables)
    rendered = runner.render_actors(bundle.manifest, world)
    scheme, _, token = rendered[actor].get("Authorization", "").partition(" ")
    cookies = [f"session={token}"] if scheme.lower() == "bearer" and token else []
    rest = {k: v for k, v in headers.items() if k.lower() != "cookie"}
    cookies += [v for k, v in headers.items() if k.lower() == "cookie"]
    return {**rest, "Cookie": "; ".join(cookies)} if cookies else rest


async def _change(
    client: SupervisorClient, action: models.EditFile | models.WriteFile, ctx: ToolContext
) -> ToolOutcome:
    if (bad := _check_path(action.path)) is not None:
        return bad
    payload = action.new if isinstance(action, models.EditFile) else action.content
    size = len(payload.encode())
    if size > ctx.max_write_bytes:
        return ToolOutcome.fail(
            models.ErrorCode.TOO_LARGE,
            f"{size} bytes is more than this episode's write limit of {ctx.max_write_bytes}",
        )
    if isinstance(action, models.EditFile):
        await client.edit_file(action.path, action.old, action.new, action.line)
        done = f"edited {action.path}"
    else:
        await client.write_file(action.path, action.content)
        done = f"wrote {action.path} ({size} bytes)"
    try:
        outcome = await _restarted(client, action.path, done)
    except ControlError as exc:
        outcome = _control_failure(exc)
    outcome.changed_files = True  # the file changed, whatever the restart did
    return outcome


async def _restarted(client: SupervisorClient, path: str, done: str) -> ToolOutcome:
    status = await client.restart_app()
    result = {"path": path, "app": status.model_dump(mode="json")}
    if status.state is protocol.AppState.RUNNING:
        return await _check_request(client, done, result)
    error = status.error or f"app state {status.state}"
    return ToolOutcome.fail(
        models.ErrorCode.APP_START_FAILED,
        f"{done}, but the app failed to start:\n{error}",
        result,
    )


RESTART_CHECK = "/openapi.json"
"""What the restart check requests: FastAPI builds it from every route and model, so a route or
model an edit broke answers 500 here even though the module imported."""


async def _check_request(
    client: SupervisorClient, done: str, result: dict[str, Any]
) -> ToolOutcome:
    """After a clean restart, one request proves the app serves (not only that it imports)."""
    response = await client.request(
        protocol.ProxyRequest(path=RESTART_CHECK, timeout_s=APP_REQUEST_TIMEOUT_S)
    )
    result["check"] = {"path": RESTART_CHECK, "status": response.status}
    if response.status < 500:
        return ToolOutcome(
            f"{done}; the app restarted cleanly and serves requests "
            f"(GET {RESTART_CHECK}: HTTP {response.status})",
            result,
        )
    log = f"\nThe app logged:\n{response.app_log}" if response.app_log else ""
    return ToolOutcome.fail(
        models.ErrorCode.APP_BROKEN,
        f"{done}; the app started, but GET {RESTART_CHECK} answers HTTP {response.status}, "
        f"so a route or model is broken{log}",
        result,
    )


async def _run_tests(client: SupervisorClient, ctx: ToolContext) -> ToolOutcome:
    manifest = ctx.bundle.manifest
    if not manifest.visible_tests:
        return ToolOutcome("this scenario has no visible tests", {"tests": []})
    results = await runner.run_suite(
        client,
        manifest,
        ctx.bundle.hidden.fixture,
        manifest.visible_tests,
        seed=manifest.visible_seed,
    )
    await seed_visible_world(client, ctx.bundle)  # leave the agent's world as it was
    rows, lines = [], []
    for r in results:
        row = verdicts.result_row(r)
        shown = row["outcome"] if row["passed"] else row["outcome"].upper()
        lines.append(f"[{r.kind}] {r.test_id}: {shown} — {r.reason}")
        rows.append(row)
    text = f"{len(results)} visible tests:\n" + "\n".join(lines)
    return ToolOutcome(text, {"tests": json.loads(json.dumps(rows, default=str))})
