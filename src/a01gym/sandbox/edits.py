"""What ``edit_file`` does to a file's text, shared by the sandbox and the gateway.

The supervisor applies an edit to the workspace; the gateway replays the same edit on the
content it already knows (:meth:`a01gym.env.episode.Episode.remember`) so that ``read_file`` and
grading see the agent's files without asking the sandbox. One function for both, so the two
copies cannot disagree about which occurrence was replaced.
"""

from __future__ import annotations

__all__ = ["EditError", "replace_once"]


class EditError(Exception):
    """An edit that cannot be applied: ``code`` is ``edit_not_found`` or ``edit_not_unique``."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)


def _starts(text: str, old: str) -> list[int]:
    """Where ``old`` starts in ``text``, without overlaps (as ``str.count`` counts them)."""
    starts: list[int] = []
    at = text.find(old)
    while at != -1:
        starts.append(at)
        at = text.find(old, at + len(old))
    return starts


def replace_once(text: str, old: str, new: str, line: int | None = None, *, path: str) -> str:
    """``text`` with one occurrence of ``old`` replaced by ``new``: the only one, or the one
    that starts on ``line`` (1-based).

    ``line`` exists for repeated code: three handlers may each hold ``if note is None:``, and
    ``read_file`` and ``search`` print the line number beside the text, so choosing one by its
    line is easier (and for a small model less error-prone) than quoting enough context to
    make the text unique. A wrong line is refused, never moved to a nearby occurrence: the
    error lists the lines where ``old`` does start.

    Raises:
        EditError: ``old`` does not occur (or not on ``line``), or occurs more than once and no
            ``line`` chooses.
    """
    starts = _starts(text, old)
    if not starts:
        raise EditError("edit_not_found", f"`old` does not occur in {path!r}")
    if line is None and len(starts) == 1:  # the common case: no line numbers to count
        return text[: starts[0]] + new + text[starts[0] + len(old) :]
    lines = [text.count("\n", 0, at) + 1 for at in starts]
    where = ", ".join(map(str, lines[:20])) + (", ..." if len(lines) > 20 else "")
    if line is None:
        raise EditError(
            "edit_not_unique",
            f"`old` occurs {len(starts)} times in {path!r} (starting on lines {where}); pass "
            "`line` to choose one, or include more context to make it unique",
        )
    if line not in lines:
        raise EditError(
            "edit_not_found",
            f"`old` does not start on line {line} of {path!r}; it starts on line {where}",
        )
    at = starts[lines.index(line)]
    return text[:at] + new + text[at + len(old) :]
