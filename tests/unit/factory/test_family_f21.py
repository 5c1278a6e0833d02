"""F21 (an internal-caller check that trusts forwarding headers): what each rendering states.

The gates (tests/integration/test_factory_fix_shapes.py, every family in both data-access
styles) show the exploits pass on the vulnerable app and fail on the fix; here, that the code
each mode renders is the one the family describes, and that its attacks cover every header
the bug trusts, so the ``x_real_ip`` trap (one header ignored, the other still trusted) is
caught by an exploit.
"""

from __future__ import annotations

import difflib

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import Layout
from a01gym.scenario.bundle import Bundle

OPS = "app/routers/ops.py"


def _bundle(style: str = "sqlite3") -> Bundle:
    cfg = config.FactoryConfig(count=1, families=["F21"], seed=5)
    spec = author.TemplateAuthor().draft(author.plan(cfg)[0])
    skeleton = spec.model_copy(update={"layout": Layout()})  # OPS is the skeleton's path
    return compiler.compile_bundle(styles.restyled(skeleton, style))


def test_the_vulnerable_app_trusts_both_forwarding_headers_and_the_fix_only_reports_them() -> None:
    bundle = _bundle()
    vulnerable = bundle.workspace[OPS].decode()
    fixed = bundle.hidden.reference_fix.files[OPS] or ""
    assert '("X-Forwarded-For", "X-Real-IP")' in vulnerable
    # the same helper in both, reported on the page: only the refusal's condition differs
    assert '("X-Forwarded-For", "X-Real-IP")' in fixed
    assert '"local": _from_this_host(request),' in fixed
    changed = [line for line in difflib.ndiff(vulnerable.splitlines(), fixed.splitlines())]
    assert [line for line in changed if line[:1] in "+-"] == [
        "-     if not (_from_this_host(request) or _is_monitor(request, settings)):",
        "+     if not _is_monitor(request, settings):",
    ]


def test_the_x_real_ip_trap_keeps_trusting_one_header_and_an_exploit_sends_it() -> None:
    bundle = _bundle()
    assert "x_real_ip" in bundle.hidden.traps
    trap = bundle.hidden.traps["x_real_ip"].files[OPS] or ""
    assert '("X-Real-IP",)' in trap and "X-Forwarded-For" not in trap
    assert "_from_this_host(request) or _is_monitor" in trap
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
