"""Workspace confinement, exact edits and diffs (no sandbox needed)."""

import os
import time

import pytest

from a01gym.sandbox.inside.workspace import SEARCH_TIMEOUT_S, Workspace, WorkspaceError


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace(tmp_path / "ws", max_file_bytes=1000)
    ws.load({"app/main.py": b"x = 1\ny = 1\n", "TASK.md": b"fix it\n"})
    return ws


@pytest.mark.parametrize("path", ["../outside", "/etc/passwd", "app/../../x", "a\x00b", ""])
def test_escapes_are_refused(workspace, path):
    with pytest.raises(WorkspaceError) as error:
        workspace.read(path)
    assert error.value.code == "path_invalid"


def test_symlinks_are_refused_even_when_planted(workspace, tmp_path):
    (tmp_path / "secret").write_text("s")
    os.symlink(tmp_path / "secret", workspace.root / "link")
    os.symlink(tmp_path, workspace.root / "dirlink")
    for path in ("link", "dirlink/secret"):
        with pytest.raises(WorkspaceError, match="symlink"):
            workspace.read(path)
    with pytest.raises(WorkspaceError, match="symlink"):
        workspace.write("dirlink/new", "x")
    assert "link" not in dict(workspace.list())


def test_edit_requires_a_unique_match(workspace):
    with pytest.raises(WorkspaceError) as error:
        workspace.edit("app/main.py", "= 1", "= 2")
    assert error.value.code == "edit_not_unique"
    with pytest.raises(WorkspaceError) as error:
        workspace.edit("app/main.py", "zzz", "q")
    assert error.value.code == "edit_not_found"
    workspace.edit("app/main.py", "x = 1", "x = 2")
    assert workspace.read("app/main.py") == "x = 2\ny = 1\n"


def test_edit_line_chooses_one_of_several_and_a_wrong_line_names_the_right_ones(workspace):
    with pytest.raises(WorkspaceError) as error:
        workspace.edit("app/main.py", "= 1", "= 2")
    assert "starting on lines 1, 2" in error.value.message and "`line`" in error.value.message
    with pytest.raises(WorkspaceError) as error:
        workspace.edit("app/main.py", "= 1", "= 2", 3)
    assert error.value.code == "edit_not_found"
    assert "does not start on line 3" in error.value.message and "line 1, 2" in error.value.message
    assert workspace.read("app/main.py") == "x = 1\ny = 1\n"  # nothing changed
    workspace.edit("app/main.py", "= 1", "= 2", 2)
    assert workspace.read("app/main.py") == "x = 1\ny = 2\n"
    with pytest.raises(WorkspaceError, match="does not start on line 2"):
        workspace.edit("app/main.py", "x = 1", "x = 3", 2)  # unique, but not on that line


def test_oversized_write_is_refused(workspace):
    with pytest.raises(WorkspaceError) as error:
        workspace.write("big.txt", "x" * 1001)
    assert error.value.code == "too_large"
    assert "big.txt" not in dict(workspace.list())


def test_changes_and_diff_track_the_baseline(workspace):
    workspace.write("app/main.py", "x = 2\ny = 1\n")
    workspace.write("new.py", "z\n")
    (workspace.root / "TASK.md").unlink()
    assert workspace.changes() == {
        "TASK.md": None,
        "app/main.py": "x = 2\ny = 1\n",
        "new.py": "z\n",
    }
    diff = workspace.diff()
    assert "-x = 1" in diff and "+x = 2" in diff and "+++ b/new.py" in diff


def test_search_is_fixed_string_and_case_sensitive_by_default(workspace):
    assert workspace.search("x = 1", None, 10) == [("app/main.py", 1, "x = 1")]
    assert workspace.search("(a+)+$", None, 10) == []
    assert workspace.search("fix", "app", 10) == []
    assert workspace.search("X = 1", None, 10) == []


def test_search_ignores_case_and_reads_regular_expressions_on_request(workspace):
    workspace.write("app/auth.py", "def Require_Admin(user):\n    return user.IsAdmin\n")
    found = workspace.search("require_admin", "app", 10, ignore_case=True)
    assert found == [("app/auth.py", 1, "def Require_Admin(user):")]
    assert workspace.search(r"def \w+\(user\)", None, 10, regex=True) == found
    assert workspace.search(r"isadmin$", None, 10, ignore_case=True, regex=True) == [
        ("app/auth.py", 2, "    return user.IsAdmin")
    ]
    assert workspace.search(r"x\s=\s1", None, 10) == []  # still text without regex


def test_a_bad_or_runaway_regular_expression_is_a_clear_error(workspace):
    with pytest.raises(WorkspaceError) as error:
        workspace.search("def (", None, 10, regex=True)
    assert error.value.code == "bad_request" and "invalid regular expression" in error.value.message
    workspace.write("app/slow.py", "a" * 40 + "!\n")
    started = time.monotonic()
    with pytest.raises(WorkspaceError) as error:
        workspace.search(r"(a|aa)+$", None, 10, regex=True)  # exponential backtracking
    assert error.value.code == "bad_request" and "backtracks" in error.value.message
    assert time.monotonic() - started < 5 * SEARCH_TIMEOUT_S


@pytest.mark.parametrize("path", ["app/routers", "nope.py", "ap"])
def test_search_under_a_missing_path_is_a_clear_error(workspace, path):
    with pytest.raises(WorkspaceError) as error:
        workspace.search("x", path, 10)
    assert error.value.code == "not_found" and "list_files" in error.value.message
    assert workspace.search("x = 1", "app/main.py", 10) == [("app/main.py", 1, "x = 1")]
