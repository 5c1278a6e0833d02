"""The app's compiled workspace modules, kept across its restarts in one sandbox.

An app recompiles every workspace module on every start (the workspace is read-only to it, and
``sys.dont_write_bytecode`` is set): ~5 ms for a factory app's 19 files. A sandbox restarts
its app after every edit, and a factory candidate's gate runs start ~14 apps that share all
files but one or two. So the app keeps each compiled module in its own writable directory,
keyed by the file's path and a hash of its contents.

Python's own ``.pyc`` caching does not fit: its default check is the source's mtime and size,
which an edit within the same second that keeps the size (``!=`` to ``==``) does not change;
and ``sys.pycache_prefix`` would move the lookup for *every* module, so a library the zygote
did not preload would be compiled from source instead of read from its ``__pycache__``. This
loader applies to the workspace only and checks contents. The cache is the app's own, in its
own sandbox: code it writes there can only change what that same app runs, which the agent
controls anyway; grading always runs in another sandbox.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import marshal
import os
import sys
from pathlib import Path
from types import CodeType

__all__ = ["MAX_ENTRIES", "install"]

MAX_ENTRIES = 1000
"""Beyond this many entries (one per file version, a few KB each) nothing more is written, so
an agent that edits a file a thousand times does not fill the sandbox's memory-backed disk."""


def install(workspace: Path, cache: Path) -> None:
    """Load modules under ``workspace`` through the cache in ``cache`` (created if missing)."""
    cache.mkdir(exist_ok=True)
    root = str(workspace)
    writable = len(os.listdir(cache)) < MAX_ENTRIES

    class CachedSourceLoader(importlib.machinery.SourceFileLoader):
        def get_code(self, fullname: str) -> CodeType:
            path = self.get_filename(fullname)
            source = self.get_data(path)
            key = hashlib.blake2b(path.encode() + b"\0" + source, digest_size=16).hexdigest()
            entry = cache / key
            with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
                code = marshal.loads(entry.read_bytes())
                if isinstance(code, CodeType):
                    return code
            code = self.source_to_code(source, path)
            if not writable:
                return code
            with contextlib.suppress(OSError):
                partial = entry.with_suffix(".partial")
                partial.write_bytes(marshal.dumps(code))
                os.replace(partial, entry)
            return code

    ours = importlib.machinery.FileFinder.path_hook(
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        (CachedSourceLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    )

    def hook(path: str) -> importlib.machinery.FileFinder:
        if path != root and not path.startswith(root + os.sep):
            raise ImportError("not in the workspace")
        return ours(path)

    sys.path_hooks.insert(0, hook)
