"""The isolation policy: strict mode refuses, warn mode names what is missing."""

import pytest

from a01gym.errors import IsolationError
from a01gym.sandbox import isolation


def test_strict_mode_refuses_weaker_isolation():
    weak = isolation.Capabilities(root=False, landlock_abi=0, filesystem="none")
    with pytest.raises(
        IsolationError, match=r"not running as root.*neither Landlock nor bubblewrap"
    ):
        isolation.check(weak, "strict")
    isolation.check(isolation.Capabilities(root=True, landlock_abi=7), "strict")


def test_warn_mode_names_what_is_missing_once(caplog):
    isolation.check(isolation.Capabilities(root=False, landlock_abi=5), "warn")
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "signals are not scoped" in warnings[0].getMessage()


def test_bwrap_counts_as_a_filesystem_guard():
    assert isolation.Capabilities(root=True, landlock_abi=0, filesystem="bwrap").missing() == []


def test_bwrap_view_makes_parents_traversable_and_binds_in_order():
    command = isolation.bwrap_command(["/opt/py/lib", "/opt/py/lib/site"], ["/tmp/sbx/root"])
    assert command.index("--tmpfs") < command.index("/tmp/sbx/root")
    dirs = [command[i + 1] for i, arg in enumerate(command) if arg == "--dir"]
    assert dirs == ["/opt", "/tmp", "/opt/py", "/tmp/sbx"]  # never inside a bound path
    assert all(
        command[i - 2 : i] == ["--perms", "0755"] for i, a in enumerate(command) if a == "--dir"
    )
