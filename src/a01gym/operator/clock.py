"""Timestamps as the Kubernetes API writes them (UTC, one-second resolution)."""

from __future__ import annotations

import datetime

__all__ = ["now", "parse", "stamp"]


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
