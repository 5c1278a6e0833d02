"""Admin handlers check the role in one of two forms, drawn per site: declared
(``Depends(security.require_admin)``, its alias or ``@security.admin_only``) or in the body
(``if not user.is_admin: raise ...``), where the guard is per handler (the ``dependency`` and
``decorator`` indirections). Each site is drawn by the spec's seed, never by its mode, so the
vulnerable app, the reference fix and every trap spell one handler alike, and the module's
docstring never says which form a handler takes."""

from __future__ import annotations

import collections
import re

import pytest

from a01gym.factory import appgen, author, config
from a01gym.factory.spec import Knobs, Layout, ScenarioSpec

_SITES = {"list_accounts": "admin.users", "read_audit_log": "admin.audit"}
_SITES |= {"disable_account": "admin.disable", "change_role": "admin.role"}


def _forms(text: str) -> dict[str, str]:
    """Handler name -> how it requires an administrator ("declared", "inline" or "none")."""
    out = {}
    for chunk in re.split(r"\n(?=@)", text):
        name = re.search(r"^def (\w+)\(", chunk, re.M)
        if name is None or name[1] not in _SITES:
            continue
        declared = any(w in chunk for w in ("require_admin", "AdminUser", "admin_only"))
        inline = "if not user.is_admin:" in chunk
        out[name[1]] = "declared" if declared else "inline" if inline else "none"
    return out


def _specs(indirection: str, count: int = 24) -> list[ScenarioSpec]:
    cfg = config.FactoryConfig(count=count, families=["F04"], seed=11)
    knobs = Knobs(indirection=indirection, hint_level=1)
    out = []
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        # the skeleton's names, each handler's caller spelled as drawn
        layout = Layout(dependency_aliases=spec.layout.dependency_aliases)
        out.append(spec.model_copy(update={"knobs": knobs, "layout": layout}))
    return out


@pytest.mark.parametrize("indirection", ["dependency", "decorator"])
def test_secure_admin_handlers_mix_both_forms_drawn_per_site(indirection: str) -> None:
    seen: collections.Counter[str] = collections.Counter()
    mixed_apps = 0
    for spec in _specs(indirection):
        forms = _forms(appgen.render_app(spec, appgen.Variant()).files["app/routers/admin.py"])
        assert set(forms) == set(_SITES) and "none" not in forms.values()
        seen.update(forms.values())
        mixed_apps += len(set(forms.values())) == 2
    # about half of 96 handlers each way, and most apps hold both forms
    assert 30 < seen["inline"] < 66 and 30 < seen["declared"] < 66, seen
    assert mixed_apps >= 12


@pytest.mark.parametrize("indirection", ["router", "middleware"])
def test_router_wide_guards_keep_handlers_free_of_role_checks(indirection: str) -> None:
    for spec in _specs(indirection, count=6):
        text = appgen.render_app(spec, appgen.Variant()).files["app/routers/admin.py"]
        assert "if not user.is_admin:" not in text


def test_every_rendering_spells_a_handler_alike_and_the_docstring_names_no_form() -> None:
    for spec in _specs("dependency"):
        secure = appgen.render_app(spec, appgen.Variant()).files["app/routers/admin.py"]
        vulnerable = appgen.render_app(
            spec, appgen.Variant(modes=dict.fromkeys(spec.bug.sites, "vuln"))
        ).files["app/routers/admin.py"]
        want, got = _forms(secure), _forms(vulnerable)
        for name, site in _SITES.items():
            assert got[name] == ("none" if site in spec.bug.sites else want[name])
        doc = secure.split('"""', 2)[1]
        assert doc == vulnerable.split('"""', 2)[1]
        assert "require_admin" not in doc and "is_admin" not in doc
