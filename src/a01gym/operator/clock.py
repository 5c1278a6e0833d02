"""Timestamps as the Kubernetes API writes them (UTC, one-second resolution)."""

from __future__ import annotations

import datetime
import functools

__all__ = ["now", "parse", "stamp"]


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=4096)
def parse(text: str | None) -> datetime.datetime | None:
    """Cached: the sweep reads every Episode's expiry each second, and one-second stamps
    repeat across a burst (10,000 Episodes share a few hundred)."""
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
