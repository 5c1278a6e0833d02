"""F21 (an internal-caller check that trusts forwarding headers): what each rendering states.

The gates (tests/integration/test_factory_fix_shapes.py, every family in both data-access
styles) show the exploits pass on the vulnerable app and fail on the fix; here, that the code
each mode renders is the one the family describes, and that its attacks cover every header
the bug trusts, so the ``x_real_ip`` trap (one header ignored, the other still trusted) is
caught by an exploit. The secure router is written two ways (``STRUCTURES``); both are checked.
"""

from __future__ import annotations

import difflib

import pytest

from a01gym.factory import author, checkforms, compiler, config, styles
from a01gym.factory.families import f21_forwarded_trust
from a01gym.factory.spec import Layout
from a01gym.scenario.bundle import Bundle

OPS = "app/routers/ops.py"


def _bundle(style: str = "sqlite3", structure: str = "token_only") -> Bundle:
    for seed in range(1, 40):
        cfg = config.FactoryConfig(count=1, families=["F21"], seed=seed)
        spec = author.TemplateAuthor().draft(author.plan(cfg)[0])
        drawn = checkforms.draw(spec, "ops.status", f21_forwarded_trust.STRUCTURES)
        if drawn == structure:
            skeleton = spec.model_copy(update={"layout": Layout()})  # OPS: the skeleton's path
            return compiler.compile_bundle(styles.restyled(skeleton, style))
    raise AssertionError(f"no seed draws {structure}")


def test_the_vulnerable_app_trusts_both_forwarding_headers_and_the_fix_neither() -> None:
    bundle = _bundle()
    vulnerable = bundle.workspace[OPS].decode()
    fixed = bundle.hidden.reference_fix.files[OPS] or ""
    assert '("X-Forwarded-For", "X-Real-IP")' in vulnerable
    assert "_from_this_host(request) or _is_monitor" in vulnerable
    assert "X-Forwarded-For" not in fixed and "X-Real-IP" not in fixed
    assert "if not _is_monitor(request, settings):" in fixed


@pytest.mark.parametrize("style", ["sqlite3", "sqlalchemy"])
def test_a_proxy_aware_fix_only_adds_the_trusted_proxy_check(style: str) -> None:
    """The other secure way: the same helper, believing the headers only from a trusted proxy
    (none configured). The vulnerable app is the same either way; the fix only adds lines."""
    bundle = _bundle(style, "proxy_aware")
    vulnerable = bundle.workspace[OPS].decode()
    fixed = bundle.hidden.reference_fix.files[OPS] or ""
    assert "TRUSTED_PROXIES" not in vulnerable  # nothing unused for a probe to find
    added = [
        line[1:].strip()
        for line in difflib.ndiff(vulnerable.splitlines(), fixed.splitlines())
        if line[:1] in "+-"
    ]
    assert added[0] == "TRUSTED_PROXIES: tuple[str, ...] = ()"
    assert "if request.client is None or request.client.host not in TRUSTED_PROXIES:" in added
    assert all(
        line[:1] != "-" for line in difflib.ndiff(vulnerable.splitlines(), fixed.splitlines())
    )


def test_the_x_real_ip_trap_keeps_trusting_one_header_and_an_exploit_sends_it() -> None:
    bundle = _bundle()
    assert "x_real_ip" in bundle.hidden.traps
    trap = bundle.hidden.traps["x_real_ip"].files[OPS] or ""
    assert '("X-Real-IP",)' in trap and "X-Forwarded-For" not in trap
    sent = [
        set(step.headers)
        for test in bundle.hidden.tests
        if test.kind == "exploit"
        for step in test.steps
    ]
    assert {"X-Real-IP"} in sent and {"X-Forwarded-For"} in sent
    assert any(step.actor == "anonymous" for t in bundle.hidden.tests for step in t.steps)


def test_the_monitoring_agent_reads_with_the_token_seeded_in_every_world() -> None:
    bundle = _bundle()
    regression = next(t for t in bundle.hidden.tests if t.id == "regression.ops_monitor")
    assert regression.steps[0].headers == {"X-Ops-Token": "{{secret:ops_token}}"}
    rows = bundle.hidden.fixture.tables["settings"]
    assert {"key": "ops_token", "value": "{{secret:ops_token}}"} in rows


def test_the_orm_style_reads_the_settings_through_a_session() -> None:
    text = _bundle("sqlalchemy").workspace[OPS].decode()
    assert "sqlite3" not in text
    assert 'session.execute(text("SELECT key, value FROM settings ORDER BY key"))' in text
