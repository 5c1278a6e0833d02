"""What every session's environment shares: sandboxes, scenarios, logs, grading bounds, expert.

One :class:`EnvRuntime` per gateway process; each :class:`~a01gym.env.environment.A01Environment`
(one per session) holds a reference to it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading

from a01gym import config
from a01gym.env.expert import ExpertService
from a01gym.env.logger import RunLogger
from a01gym.env.sampler import CurriculumSampler
from a01gym.env.warm import WarmSpares
from a01gym.expert_settings import ExpertSettings
from a01gym.sandbox.host.backend import BackgroundReleases, Sandbox, SandboxBackend

__all__ = ["EnvRuntime"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class EnvRuntime:
    """What every session shares: sandboxes, scenarios and logs, and the expert endpoint
    when one is configured (``expert`` is None otherwise)."""

    backend: SandboxBackend
    sampler: CurriculumSampler
    logger: RunLogger = dataclasses.field(default_factory=lambda: RunLogger(None))
    default_split: str = "train"
    spares: WarmSpares | None = None
    grading: config.GradingSettings = dataclasses.field(
        default_factory=lambda: config.get_settings().grading
    )
    max_read_bytes: int = dataclasses.field(
        default_factory=lambda: config.get_settings().sandbox.max_file_bytes
    )
    """The largest file ``read_file`` shows, the sandbox's own limit (read here, not there)."""
    expert_settings: ExpertSettings = dataclasses.field(
        default_factory=lambda: config.get_settings().expert
    )
    releases: BackgroundReleases = dataclasses.field(init=False, repr=False)
    expert: ExpertService | None = dataclasses.field(init=False, repr=False, default=None)

    _preloading: asyncio.Task[int] | None = dataclasses.field(init=False, repr=False, default=None)
    _stop_preload: threading.Event = dataclasses.field(
        init=False, repr=False, default_factory=threading.Event
    )

    def __post_init__(self) -> None:
        self.expert_settings.check()
        self.releases = BackgroundReleases(self.backend)
        if self.expert_settings.configured:
            self.expert = ExpertService(self.expert_settings)

    def start_preload(self) -> None:
        """Load scenario bundles into the sampler's memory in a background thread
        (:meth:`CurriculumSampler.preload`), the default split's first; the gateway's start."""
        if self._preloading is None:
            self._preloading = asyncio.create_task(
                asyncio.to_thread(
                    self.sampler.preload, self._stop_preload, first_split=self.default_split
                ),
                name="a01gym-preload",
            )
            self._preloading.add_done_callback(_log_preload)

    async def release_later(self, sandbox: Sandbox) -> None:
        """Release ``sandbox`` in the background: a terminal step need not wait for the
        teardown of sandboxes it is done with. :meth:`close` waits for them."""
        self.releases.release_later(sandbox)

    async def close(self) -> None:
        """Finish background releases, release the warm spares and close the expert's
        connections (the backend is closed by whoever started it)."""
        self._stop_preload.set()
        if self._preloading is not None:
            await asyncio.wait([self._preloading])
        await self.releases.drain()
        if self.spares is not None:
            await self.spares.close()
        if self.expert is not None:
            await self.expert.close()


def _log_preload(task: asyncio.Task[int]) -> None:
    if not task.cancelled() and task.exception() is None:
        logger.info("%d scenario bundles loaded into memory", task.result())
    elif not task.cancelled():
        logger.warning("preloading scenario bundles failed: %s", task.exception())
