"""Gate G5, the hacker probe: every generic reward hack must score exactly 0.

Each hack of :data:`a01gym.factory.hacks.HACKS` is applied to the candidate's vulnerable
workspace and graded like a submission: a real sandbox, the real verifier, a world seed that is
never the visible one, and the runtime's grading bounds (:class:`a01gym.config.GradingSettings`).
A hack that scores above the no-op (0) or resolves the scenario rejects the candidate, with the
hack's name and score as the reason; every result lands in the cache index with the rest of the
gate report.

Cost, since the probe multiplies every candidate: a hack's run stops as soon as its score is
known to be 0 (``stop_at_zero``: a regression failed, or every exploit got through), the hacks
of one candidate take turns on one sandbox, the one its other gate runs used
(:mod:`a01gym.factory.lease`: our own patches, so nothing of one can leak into the next:
loading a workspace wipes the files, the database and the app), the hacks that only
wait for a timeout (a stalled app) go first and hold no CPU worker while they wait, and the
battery stops at the first hack that pays.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import time
from collections.abc import Sequence

from pydantic import BaseModel

from a01gym.config import GradingSettings
from a01gym.errors import A01GymError
from a01gym.factory import hack_leak, hacks  # noqa: F401  (hack_leak registers its hack)
from a01gym.factory.lease import SandboxLease
from a01gym.grading import verification
from a01gym.sandbox.host.backend import Sandbox, SandboxBackend
from a01gym.sandbox.host.client import ControlError
from a01gym.scenario.bundle import Bundle

__all__ = ["ProbeResult", "judge", "probe_bundle"]

logger = logging.getLogger(__name__)


class ProbeResult(BaseModel):
    """One hack's run, as recorded in the cache index."""

    hack: str
    ran: bool = True
    graded: bool = True
    score: float = 0.0
    resolved: bool = False
    security: float = 0.0
    regression: float = 0.0
    ending: str = ""
    tests_run: int = 0
    note: str = ""
    duration_ms: float = 0.0

    @property
    def pays(self) -> bool:
        """The hack earned something (or could not be graded): reject the candidate."""
        return self.ran and (not self.graded or self.resolved or self.score > 0.0)


def _seed(bundle: Bundle, hack: str) -> int:
    text = f"{bundle.manifest.content_hash}\x00probe\x00{hack}".encode()
    seed = int.from_bytes(hashlib.sha256(text).digest()[:4]) % 2**31
    return seed + 1 if seed == bundle.manifest.visible_seed else seed


async def _keep(_: Sandbox) -> None:
    return None


class _Battery:
    """The runs of one candidate, one after another on one sandbox."""

    def __init__(self, lease: SandboxLease, bundle: Bundle, semaphore: asyncio.Semaphore):
        self.lease, self.bundle, self.semaphore = lease, bundle, semaphore
        self.grading = GradingSettings()
        self.unloaded = dataclasses.replace(bundle, workspace={})  # makes verify() load files
        self.paid = False

    async def run(self, hack: hacks.Hack) -> ProbeResult:
        started = time.perf_counter()
        try:
            patch = hack.build(self.bundle)
        except hacks.NotApplicable as exc:
            return ProbeResult(hack=hack.name, ran=False, note=f"not applicable: {exc}")
        if self.paid:
            return ProbeResult(hack=hack.name, ran=False, note="not run: another hack paid")
        files = self.bundle.patched_workspace(patch)
        try:
            if hack.waits:  # idle until a timeout: no CPU worker held meanwhile
                result = await self._verify(files, hack, await self.lease.get())
            else:
                async with self.semaphore:
                    result = await self._verify(files, hack, await self.lease.get())
        except (A01GymError, ControlError) as exc:
            logger.warning("probe %s of %s failed: %s", hack.name, self.bundle.manifest.name, exc)
            await self.lease.discard()  # the sandbox may be broken: the next hack takes a new one
            return ProbeResult(
                hack=hack.name,
                graded=False,  # fail closed: a probe that could not be graded admits nothing
                note=f"could not be graded: {exc}"[:300],
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        outcome = ProbeResult(
            hack=hack.name,
            score=result.score.value,
            resolved=result.score.resolved,
            security=result.score.security,
            regression=result.score.regression,
            ending=result.ending.value,
            tests_run=result.tests_run,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        self.paid = self.paid or outcome.pays
        return outcome

    async def _verify(
        self, files: dict[str, bytes], hack: hacks.Hack, sandbox: Sandbox
    ) -> verification.Verification:
        return await verification.verify(
            self.lease.backend,
            self.unloaded,
            files,
            seed=_seed(self.bundle, hack.name),
            started=sandbox,
            release=_keep,
            deadline_s=self.grading.deadline_s,
            request_timeout_s=self.grading.request_timeout_s,
            stop_at_zero=True,
        )


async def probe_bundle(
    backend: SandboxBackend,
    bundle: Bundle,
    *,
    semaphore: asyncio.Semaphore | None = None,
    battery: Sequence[hacks.Hack] | None = None,
    lease: SandboxLease | None = None,
) -> list[ProbeResult]:
    """Run every hack of ``battery`` (default: all registered) against ``bundle``.

    Args:
        semaphore: the CPU workers shared with the other gates (default: 1).
        lease: the sandbox to run on, shared with the candidate's other gate runs (default:
            one of ``backend``'s, released at the end).
    """
    chosen = list(hacks.HACKS.values()) if battery is None else list(battery)
    async with contextlib.AsyncExitStack() as stack:
        if lease is None:
            lease = await stack.enter_async_context(SandboxLease(backend))
        runs = _Battery(lease, bundle, semaphore or asyncio.Semaphore(1))
        # The waiting hacks first: while one waits, other candidates use the CPU workers, and
        # a build's last candidates end on CPU work, not on a timeout with idle cores.
        by_name = {
            hack.name: await runs.run(hack) for hack in sorted(chosen, key=lambda h: not h.waits)
        }
    return [by_name[hack.name] for hack in chosen]


def judge(results: Sequence[ProbeResult]) -> list[str]:
    """Rejection reasons: one per hack that paid."""
    reasons = []
    for result in results:
        if not result.pays:
            continue
        if not result.graded:
            verdict = "could not be graded"
        elif result.resolved:
            verdict = "resolves the scenario"
        else:
            verdict = f"scores {result.score:.3f}, above the no-op"
        reasons.append(
            f"G5: hack {result.hack} {verdict}" + (f" ({result.note})" if result.note else "")
        )
    return reasons
