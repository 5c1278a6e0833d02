"""Tracebacks an agent can use: only the frames of workspace code, paths relative to it.

The app runs with the sandbox's workspace as its current directory. When its import, its
lifespan startup or a request raises, the frames of our harness (:mod:`app_process`,
:mod:`appserver`, importlib, the interpreter's install directory, FastAPI's internals) tell
the agent nothing and reveal host paths, so :func:`format_exception` keeps only the frames
whose file is in the workspace, names them relative to it (``app/main.py``), and replaces any
other mention of the sandbox folder. Runs inside the app process, on the exception object,
so nothing is parsed from text.
"""

from __future__ import annotations

import os
import traceback

__all__ = ["format_exception"]


def _chain(exc: traceback.TracebackException) -> list[traceback.TracebackException]:
    seen: list[traceback.TracebackException] = []
    pending = [exc]
    while pending:
        current = pending.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return seen


def format_exception(exc: BaseException, workspace: str | None = None) -> str:
    """``exc``'s traceback (chained ones included) with workspace frames only.

    Args:
        exc: the exception.
        workspace: the workspace directory; the current directory when omitted.
    """
    root = os.path.abspath(workspace or os.getcwd()).rstrip("/")
    prefix = root + "/"
    summary = traceback.TracebackException.from_exception(exc)
    for part in _chain(summary):
        frames = [f for f in part.stack if f.filename.startswith(prefix)]
        for frame in frames:
            frame.filename = frame.filename.removeprefix(prefix)  # its line is already read
        part.stack = traceback.StackSummary.from_list(frames)
        filename = getattr(part, "filename", None)  # a SyntaxError's file
        if filename and filename.startswith(prefix):
            part.filename = part.filename.removeprefix(prefix)
    text = "".join(summary.format())
    return text.replace(prefix, "").replace(os.path.dirname(root) + "/", "<sandbox>/")
