"""The shared ``-v/-q/--log-format`` setup for every command."""

from __future__ import annotations

import json
import logging
import sys
from typing import Literal

__all__ = ["LogFormat", "configure_logging"]

LogFormat = Literal["text", "json"]
"""The choices of ``--log-format`` (and ``A01GYM_LOG_FORMAT``)."""


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "time": self.formatTime(record),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def configure_logging(verbosity: int, log_format: LogFormat) -> None:
    """Log to stderr; ``verbosity`` -1 = errors only, 0 = warnings, 1 = info, 2+ = debug."""
    level = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(max(level, logging.WARNING))
