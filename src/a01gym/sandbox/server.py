"""uvicorn with a one-second housekeeping tick, for the supervisor and the app.

uvicorn wakes every 0.1 s to refresh its Date header and check for shutdown; an idle server
then costs ~2.4 ms of CPU per second. Every sandbox runs two servers and a warm pool keeps
hundreds idle, which adds up to a whole core. Ticking once a second keeps the Date header exact
to the second (it only changes once a second) and delays a graceful exit by under a second.
"""

from __future__ import annotations

import asyncio

import uvicorn

__all__ = ["QuietServer"]

_TICKS_PER_WAKE = 10  # uvicorn's on_tick counts tenths of a second


class QuietServer(uvicorn.Server):
    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + _TICKS_PER_WAKE) % 864000
            await asyncio.sleep(_TICKS_PER_WAKE / 10)
            should_exit = await self.on_tick(counter)
