"""F10: a file download that joins a client-supplied name without a containment check."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

from a01gym.factory import checkforms, testkit
from a01gym.factory.families import vocabulary
from a01gym.factory.families.base import Family
from a01gym.factory.families.shared import R, file_own
from a01gym.scenario.httptest import HttpTest

__all__ = ["FAMILY", "METHODS", "DownloadCheck", "download_check"]


def _regressions(cast: testkit.Cast) -> list[HttpTest]:
    v = cast.victim
    return [
        file_own(cast),
        testkit.read_test(
            "regression.file_nested",
            R,
            v,
            "/files/download",
            f"{v}_nested",
            query={"name": "reports/2024/q1.txt"},
            description="the owner downloads a file from a subfolder",
        ),
    ]


_NO_SLASH = vocabulary.Trap(
    name="no_slash",
    doc="file names with a slash refused, other traversals let through",
)

FAMILY = Family(
    id="F10",
    title="Path traversal in file download",
    cwes=("CWE-22", "CWE-23", "CWE-552"),
    sites=("files.download",),
    traps=(vocabulary.DENY_ALL, vocabulary.DELETE_ROUTE, _NO_SLASH),
    regressions=_regressions,
)


# -- how an app checks the download (drawn per scenario, the same in every app) ------------
METHODS = ("resolve", "commonpath", "parts", "storage")
"""``resolve``: resolve and test containment; ``commonpath``: ``os.path.realpath`` and
``os.path.commonpath``; ``parts``: refuse absolute names and ``..`` parts before joining;
``storage``: the storage module resolves names, and the check lives there."""

_TARGET = {
    "resolve": ("target = base / name", "target = (base / name).resolve()"),
    "commonpath": ("target = Path(os.path.realpath(base / name))",) * 2,
    "parts": ("target = base / name",) * 2,
}
_REFUSE = {
    "resolve": "not target.is_relative_to(base.resolve()) or not target.is_file()",
    "commonpath": (
        "os.path.commonpath([base.resolve(), target]) != str(base.resolve()) "
        "or not target.is_file()"
    ),
    "parts": 'Path(name).is_absolute() or ".." in Path(name).parts or not target.is_file()',
}
_STORAGE = {
    "vuln": '''
        def resolve_in(base: Path, name: str) -> Path:
            """The stored file called ``name`` in the folder ``base``."""
            return base / name
        ''',
    "secure": '''
        def resolve_in(base: Path, name: str) -> Path | None:
            """The stored file called ``name`` in the folder ``base`` (None outside it)."""
            target = (base / name).resolve()
            return target if target.is_relative_to(base.resolve()) else None
        ''',
}


@dataclasses.dataclass(frozen=True)
class DownloadCheck:
    """The download handler's lines after ``base`` is set (they bind ``target`` or raise),
    the files router's helper and imports, and the storage module's helper."""

    body: str
    helper: str = ""
    imports: str = ""
    storage: str = ""


def download_check(spec: Any, mode: str) -> DownloadCheck:
    """How ``spec``'s app checks ``/files/download`` in ``mode``."""
    method = checkforms.draw(spec, "files.download.method", METHODS)
    strip = 'name = name.replace("../", "")\n' if mode == "strip_once" else ""
    no_slash = (
        'if "/" in name or ".." in name:\n'
        '    raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid file name")\n'
        if mode == "no_slash"
        else ""
    )
    open_ = mode in ("vuln", "strip_once")
    if mode == "deny":
        return DownloadCheck('raise HTTPException(status.HTTP_404_NOT_FOUND, "file not found")')
    if method == "storage":
        body = (
            "target = storage.resolve_in(base, name)\n"
            "if target is None or not target.is_file():\n"
            '    raise HTTPException(status.HTTP_404_NOT_FOUND, "file not found")'
        )
        helper = _STORAGE["vuln" if open_ else "secure"]
        return DownloadCheck(strip + no_slash + body, storage=textwrap.dedent(helper).strip())
    form = checkforms.draw(spec, "files.download", checkforms.PLAIN_FORMS)
    guard = checkforms.Guard(
        form,
        "_unavailable" if form == "predicate" else "_ensure_downloadable",
        "base: Path, name: str, target: Path",
        "base, name, target",
        "HTTP_404_NOT_FOUND",
        "file not found",
        "Only the caller's own stored files are served.",
    )
    refuse = "not target.is_file()" if open_ else _REFUSE[method]
    target = _TARGET[method][0 if open_ else 1]
    return DownloadCheck(
        f"{strip}{no_slash}{target}\n{guard.check(refuse)}",
        helper=guard.helper(refuse),
        imports="import os\n" if method == "commonpath" else "",
    )
