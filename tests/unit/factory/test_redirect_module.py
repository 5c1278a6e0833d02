"""An F11 app writes ``app/redirects.py`` only where a redirect calls it.

Where every redirect of a ``module``-structure app was broken, the module stayed and defined a
``landing_target`` nothing called: a security helper left unused beside the bug, which the
``unused_helper`` probe names (3 of seed 31's 14 F11 scenarios). Its hit never counted, since the
fix changes the sign-in router to call it, not the module; the app itself was the giveaway."""

from __future__ import annotations

from a01gym.factory import author, checkforms, compiler, config, giveaways
from a01gym.factory.families import f11_open_redirect


def test_no_f11_app_defines_a_redirect_check_it_never_calls() -> None:
    cfg = config.FactoryConfig(count=120, families=["F11"], seed=31)
    module_apps = added = 0
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        bundle = compiler.compile_bundle(spec)
        files = giveaways.python_files(bundle)
        code = "\n".join(files.values())
        for helper in ("landing_target", "is_trusted_target"):
            if f"def {helper}(" in code:
                assert code.count(f"{helper}(") >= 2, (spec.seed, helper)
        pointer = giveaways.PROBES["unused_helper"](bundle, [files], 0)
        assert pointer is None or "def landing_target(" not in files[pointer.path]
        if checkforms.draw(spec, "redirect", f11_open_redirect.STRUCTURES) == "module":
            module_apps += 1
            added += any(
                path not in bundle.workspace and "def landing_target(" in str(text)
                for path, text in bundle.hidden.reference_fix.files.items()
            )
    # the structure is drawn often enough to meet apps with every redirect broken
    assert module_apps >= 25 and added >= 5, (module_apps, added)
