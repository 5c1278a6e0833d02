"""No module in src/ is over 400 lines: past that, a module holds more than one concept.

The house style (one concept per module, 100–300 lines) is a habit; this is its hard edge. A
module that grows past it is split along a seam (see docs/architecture.md), not chopped.
"""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 400


def _too_long(root: Path) -> dict[str, int]:
    sizes = {
        path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in root.rglob("*.py")
    }
    return {path: lines for path, lines in sorted(sizes.items()) if lines > MAX_LINES}


def test_no_module_in_src_is_over_400_lines() -> None:
    assert len(list(SRC.rglob("*.py"))) > 100
    assert _too_long(SRC) == {}


def test_a_long_module_is_reported(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert _too_long(tmp_path) == {"long.py": MAX_LINES + 1}
