"""The isolation policy: strict mode refuses, warn mode names what is missing."""

import pytest

from a01gym.errors import IsolationError
from a01gym.sandbox import isolation


def test_strict_mode_refuses_weaker_isolation():
    weak = isolation.Capabilities(root=False, landlock_abi=0)
    with pytest.raises(IsolationError, match=r"not running as root.*Landlock unavailable"):
        isolation.check(weak, "strict")
    isolation.check(isolation.Capabilities(root=True, landlock_abi=7), "strict")


def test_warn_mode_names_what_is_missing_once(caplog):
    isolation.check(isolation.Capabilities(root=True, landlock_abi=5), "warn")
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "signals are not scoped" in warnings[0].getMessage()
