"""One sandbox for every gate run of one candidate, taken on first use and replaced if broken.

Every gate run (G1–G4's vulnerable, reference and trap runs, G5's hacks) loads its own files
into the sandbox it is given, which wipes the workspace, the database and the app and starts
a fresh app process: nothing of one run survives into the next (the same holds for a fresh
sandbox, which is only a fresh supervisor around the same steps). The runs are our own
patches, never an agent's, so no run can tamper with the supervisor the next one uses. What a
fresh sandbox per run would add is one supervisor fork, start and kill per run, about a tenth
of a run's CPU; a candidate therefore keeps one sandbox for all its runs. A run that fails
with a sandbox error :meth:`discard`\\ s it, and the next run gets a new one.
"""

from __future__ import annotations

from a01gym.sandbox.host.backend import Sandbox, SandboxBackend

__all__ = ["SandboxLease"]


class SandboxLease:
    """The sandbox a candidate's runs share, one run at a time."""

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self._sandbox: Sandbox | None = None
        self.acquired = 0
        """How many sandboxes this lease has taken (1 unless one broke)."""

    async def get(self) -> Sandbox:
        """The current sandbox, acquired on first use or after :meth:`discard`."""
        if self._sandbox is None:
            self._sandbox = await self.backend.acquire()
            self.acquired += 1
        return self._sandbox

    async def discard(self) -> None:
        """Release the sandbox (it may be broken, or the candidate is done)."""
        if self._sandbox is not None:
            sandbox, self._sandbox = self._sandbox, None
            await self.backend.release(sandbox)

    async def __aenter__(self) -> SandboxLease:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.discard()
