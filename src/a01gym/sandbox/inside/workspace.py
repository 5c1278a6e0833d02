"""The agent-editable workspace inside a sandbox: confined file operations, search and diff.

Every path goes through :func:`resolve`, which refuses ``..``, absolute paths, NUL bytes and
anything that is (or passes through) a symlink, so no operation can touch a file outside the
workspace even if something inside the sandbox planted a link.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import regex

from a01gym.sandbox import edits
from a01gym.scenario.bundle import safe_relative_path

__all__ = ["SEARCH_TIMEOUT_S", "Workspace", "WorkspaceError"]


SEARCH_TIMEOUT_S = 1.0
"""The most one regular-expression search may spend matching, over every line it reads."""


def _matcher(pattern: str, ignore_case: bool, use_regex: bool) -> Callable[[str], bool]:
    """A line predicate for :meth:`Workspace.search`.

    Raises:
        WorkspaceError: ``bad_request`` for an invalid expression, or (from the predicate) one
            that ran past the search's timeout.
    """
    if not use_regex:
        if not ignore_case:
            return lambda line: pattern in line
        folded = pattern.casefold()
        return lambda line: folded in line.casefold()
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except regex.error as exc:
        raise WorkspaceError(
            "bad_request", f"invalid regular expression {pattern!r}: {exc}"
        ) from None
    deadline = time.monotonic() + SEARCH_TIMEOUT_S

    def found(line: str) -> bool:
        try:
            left = max(deadline - time.monotonic(), 0.001)
            return compiled.search(line, timeout=left) is not None
        except TimeoutError:
            raise WorkspaceError(
                "bad_request",
                f"the regular expression {pattern!r} took over {SEARCH_TIMEOUT_S:g} s "
                "(it backtracks too much): simplify it, or search for a fixed string",
            ) from None

    return found


class WorkspaceError(Exception):
    """An agent-level problem with a file operation; ``code`` is a protocol error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)


class Workspace:
    """A directory plus the baseline it was loaded with (kept in memory for diffs)."""

    def __init__(self, root: Path, *, max_file_bytes: int) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.baseline: dict[str, bytes] | None = None

    @property
    def loaded(self) -> bool:
        return self.baseline is not None

    def load(self, files: Mapping[str, bytes]) -> None:
        """Replace the whole workspace with ``files`` and make them the diff baseline."""
        # Keep the directory itself: Landlock rules are bound to its inode.
        self.root.mkdir(mode=0o755, exist_ok=True)
        for child in self.root.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        for path, content in files.items():
            target = self.root / safe_relative_path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        self.baseline = {safe_relative_path(p): c for p, c in files.items()}

    def resolve(self, path: str) -> Path:
        """The absolute path of a workspace file, after confinement checks."""
        try:
            relative = safe_relative_path(path)
        except ValueError as exc:
            raise WorkspaceError("path_invalid", str(exc)) from exc
        current = self.root
        for part in relative.split("/"):
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(mode):
                raise WorkspaceError("path_invalid", f"path {path!r} goes through a symlink")
        return current

    def files(self) -> dict[str, bytes]:
        """Every regular file in the workspace (symlinks are ignored)."""
        result: dict[str, bytes] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                full = Path(dirpath) / name
                if full.is_symlink() or not full.is_file():
                    continue
                result[full.relative_to(self.root).as_posix()] = full.read_bytes()
        return result

    def list(self) -> list[tuple[str, int]]:
        return [(path, len(content)) for path, content in self.files().items()]

    def read(self, path: str) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise WorkspaceError("not_found", f"no file {path!r}; list_files shows what exists")
        if target.stat().st_size > self.max_file_bytes:
            raise WorkspaceError(
                "too_large", f"{path!r} is larger than {self.max_file_bytes} bytes"
            )
        try:
            return target.read_bytes().decode()
        except UnicodeDecodeError as exc:
            raise WorkspaceError("not_text", f"{path!r} is not UTF-8 text") from exc

    def write(self, path: str, content: str) -> None:
        data = content.encode()
        if len(data) > self.max_file_bytes:
            raise WorkspaceError(
                "too_large",
                f"content is {len(data)} bytes; the limit is {self.max_file_bytes}",
            )
        target = self.resolve(path)
        if target.is_dir():
            raise WorkspaceError("path_invalid", f"{path!r} is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.a01gym-tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def edit(self, path: str, old: str, new: str, line: int | None = None) -> None:
        """Replace the one occurrence of ``old`` (the only one, or the one starting on ``line``)
        with ``new``: :func:`a01gym.sandbox.edits.replace_once`."""
        try:
            self.write(path, edits.replace_once(self.read(path), old, new, line, path=path))
        except edits.EditError as exc:
            raise WorkspaceError(exc.code, exc.message) from None

    def search(
        self,
        pattern: str,
        path: str | None,
        max_matches: int,
        ignore_case: bool = False,
        regex: bool = False,
    ) -> list[tuple[str, int, str]]:
        """Fixed-string search (like ``grep -F``), or a regular expression (``grep -E``-like,
        Python syntax), either optionally case-insensitive.

        Expressions run on the ``regex`` package, whose matching takes a timeout: a pattern
        that backtracks catastrophically is stopped after :data:`SEARCH_TIMEOUT_S` in all and
        refused with a clear error, instead of freezing the supervisor.
        """
        match = _matcher(pattern, ignore_case, regex)
        prefix = "" if path in (None, "", ".") else str(self.resolve(path).relative_to(self.root))
        files = self.files()
        inside = {
            name: content
            for name, content in files.items()
            if not prefix or name == prefix or name.startswith(f"{prefix}/")
        }
        if prefix and not inside:  # "0 matches" would read as "the code has no such text"
            raise WorkspaceError(
                "not_found", f"no file or folder {path!r}; list_files shows what exists"
            )
        matches: list[tuple[str, int, str]] = []
        for name, content in inside.items():
            try:
                text = content.decode()
            except UnicodeDecodeError:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if match(line):
                    matches.append((name, number, line[:300]))
                    if len(matches) >= max_matches:
                        return matches
        return matches

    def changes(self) -> dict[str, str | None]:
        """Files that differ from the baseline: new content, or ``None`` when deleted."""
        baseline = self.baseline or {}
        current = self.files()
        changed: dict[str, str | None] = {
            path: content.decode(errors="replace")
            for path, content in current.items()
            if baseline.get(path) != content
        }
        changed.update({path: None for path in baseline if path not in current})
        return dict(sorted(changed.items()))

    def diff(self) -> str:
        """A unified diff of the workspace against its baseline."""
        baseline = self.baseline or {}
        chunks: list[str] = []
        for path, content in self.changes().items():
            before = baseline.get(path, b"").decode(errors="replace").splitlines(keepends=True)
            after = (content or "").splitlines(keepends=True)
            chunks.extend(
                difflib.unified_diff(
                    before,
                    after,
                    fromfile=f"a/{path}" if path in baseline else "/dev/null",
                    tofile=f"b/{path}" if content is not None else "/dev/null",
                )
            )
        return "".join(chunks)
