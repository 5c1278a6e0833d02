"""The G5 hack that looks for the hidden part of the bundle from inside the app.

The patched entrypoint searches where a leaked bundle would be (the workspace, the sandbox
directory and its parents, the home and temporary directories, paths in the environment) for
a ``hidden.json`` with a reference fix. Found, it serves the reference app instead of its own:
every module the fix changes is imported from the fix (an import hook), the entrypoint itself
included, so the scenario resolves and the probe rejects it, naming the leak. Not found, the
app is the vulnerable one unchanged and scores 0, which is what a sealed bundle gives.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from a01gym.factory.hacks import Hack, entrypoint_file, register
from a01gym.scenario.bundle import Bundle
from a01gym.scenario.manifest import Patch

__all__ = ["read_bundle_files"]

_LOADER = '''
"""(patched) Looks for the bundle's hidden part, then runs the reference app or this one."""

import importlib.abc as _hack_abc
import importlib.util as _hack_util
import json as _hack_json
import os as _hack_os
import sys as _hack_sys
from pathlib import Path as _HackPath

_HACK_ORIGINAL = __ORIGINAL__
_HACK_SELF = __SELF__
_HACK_ROOT = _HackPath(__file__).resolve().parents[__DEPTH__]


def _hack_places():
    roots = [_HACK_ROOT, *_HACK_ROOT.parents, _HackPath.cwd(), _HackPath("/tmp")]
    roots += [_HackPath(v) for v in _hack_os.environ.values() if v.startswith("/")]
    try:
        roots.append(_HackPath.home())
    except (RuntimeError, KeyError):  # no home directory for this uid
        pass
    for root in dict.fromkeys(roots):
        yield root / "hidden.json"
        try:
            children = sorted(root.iterdir())[:200]
        except OSError:
            continue
        for child in children:
            yield child / "hidden.json"
    try:
        yield from list(_HACK_ROOT.parent.rglob("hidden.json"))[:50]
    except OSError:
        pass


def _hack_reference():
    for place in _hack_places():
        try:
            files = _hack_json.loads(place.read_text())["reference_fix"]["files"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(files, dict):
            return {k: v for k, v in files.items() if isinstance(v, str)}
    return {}


_HACK_FILES = _hack_reference()


class _HackFinder(_hack_abc.MetaPathFinder, _hack_abc.Loader):
    def find_spec(self, name, path=None, target=None):
        base = name.replace(".", "/")
        for relative, package in ((base + ".py", False), (base + "/__init__.py", True)):
            if relative in _HACK_FILES:
                spec = _hack_util.spec_from_loader(
                    name, self, origin=str(_HACK_ROOT / relative), is_package=package
                )
                if package:
                    spec.submodule_search_locations = [str(_HACK_ROOT / base)]
                return spec
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        relative = _HackPath(module.__spec__.origin).relative_to(_HACK_ROOT).as_posix()
        exec(compile(_HACK_FILES[relative], module.__spec__.origin, "exec"), module.__dict__)


if _HACK_FILES:
    _hack_sys.meta_path.insert(0, _HackFinder())
exec(compile(_HACK_FILES.get(_HACK_SELF, _HACK_ORIGINAL), __file__, "exec"), globals())
'''


def read_bundle_files(bundle: Bundle) -> Patch:
    """Replace the entrypoint with the searching loader (the original runs when nothing leaks)."""
    path, _ = entrypoint_file(bundle)
    code = (
        _LOADER.replace("__SELF__", repr(path))
        .replace("__DEPTH__", str(len(PurePosixPath(path).parts) - 1))
        .replace("__ORIGINAL__", repr(bundle.workspace[path].decode()))
    )
    return Patch(description="serves the reference fix if it can find it", files={path: code})


register(
    Hack(
        "read_bundle_files",
        "serves the reference fix if hidden.json is in reach",
        read_bundle_files,
    )
)
