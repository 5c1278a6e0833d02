"""OpenEnv's reference server: a trivial tool environment built only from ``openenv``'s
``create_app``, the floor a benchmark measures a01gym's protocol costs against.

Everything a reset or a step costs here is OpenEnv's own server, its WebSocket session and
(de)serialisation, and the client, with no work behind it: a reset hands out a fixed task and
file list, a ``read_file`` step a file from a dict. The environment overrides ``reset_async``
and ``step_async``, so OpenEnv's server calls it on its event loop, without the thread pool it
uses for synchronous environments (the cheapest path it has, as a01gym's gateway is async too).
:func:`serve` starts it as its own ``uvicorn`` process on 127.0.0.1, like
:func:`serving.gateway` starts ``a01gym serve``, so both are driven by the same client through
a real socket, and the two servers' CPU stays apart from the benchmark's.

    python bench/reference.py --port 8123   # serve it (what serve() runs)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

import serving

__all__ = ["ReferenceEnvironment", "ToolAction", "ToolObservation", "serve"]

FILES = {
    "README.md": "A notes service.\n",
    "app/main.py": "from fastapi import FastAPI\n\napp = FastAPI()\n",
    "app/db.py": '"""SQLite access for the notes service."""\n\nimport sqlite3\n',
}
TASK = "Find and fix the broken access control in this service."


class ToolAction(Action):
    """A tool call: the tool's name and, for ``read_file``, a path."""

    tool: str
    path: str = ""


class ToolObservation(Observation):
    """What the agent sees: a tool's result or an error."""

    result: dict[str, Any] | None = None
    error: str | None = None


class ReferenceEnvironment(Environment[ToolAction, ToolObservation, State]):
    """A task and three files in memory; ``read_file`` reads one, any other tool errs."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ToolObservation:
        self._state = State(episode_id=episode_id or f"ref-{seed}", step_count=0)
        return ToolObservation(result={"task": TASK, "files": sorted(FILES)})

    def step(
        self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ToolObservation:
        self._state.step_count += 1
        if action.tool != "read_file":
            return ToolObservation(error=f"unknown tool {action.tool!r}")
        if action.path not in FILES:
            return ToolObservation(error=f"no such file {action.path!r}")
        return ToolObservation(result={"path": action.path, "content": FILES[action.path]})

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ToolObservation:
        return self.reset(seed=seed, episode_id=episode_id)

    async def step_async(
        self, action: ToolAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ToolObservation:
        return self.step(action)

    @property
    def state(self) -> State:
        return self._state


@contextlib.asynccontextmanager
async def serve() -> AsyncIterator[serving.Served]:
    """Run the reference server in its own process until the block ends."""
    from a01gym.gateway.server import free_port

    port = free_port()
    command = [sys.executable, str(Path(__file__)), "--port", str(port)]
    async with serving.process(command, f"http://127.0.0.1:{port}") as served:
        yield served


def main() -> None:
    import uvicorn

    from a01gym.gateway.server import uvicorn_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = create_app(
        ReferenceEnvironment,
        ToolAction,
        ToolObservation,
        env_name="reference",
        max_concurrent_envs=4096,
    )
    # a01gym's gateway's uvicorn settings (no per-message deflate, no access log), so the
    # transport is the same on both sides and only what runs behind it differs.
    uvicorn.Server(uvicorn_config(app, host="127.0.0.1", port=args.port)).run()


if __name__ == "__main__":
    main()
