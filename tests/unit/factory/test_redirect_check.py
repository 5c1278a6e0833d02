"""Every F11 app checks its redirects in ``app/redirects.py``, and calls that check.

Where no redirect is left secure, the vulnerable app keeps the check, with ``or`` for ``and``
in its host rule. It used to drop the check (a function, ``TRUSTED_REDIRECT_HOSTS`` and an
import) and the reference fix wrote them back, so the files the fix touched differed from every
secure app's by more than the bug; kept unused instead, the check was the giveaway
``unused_helper`` names (3 of seed 31's 14 F11 scenarios had one)."""

from __future__ import annotations

import collections

from a01gym.factory import author, compiler, config, giveaways
from a01gym.factory.families import f11_open_redirect

_BOTH = {"redirect.continue", "redirect.signout"}


def test_every_f11_app_calls_its_redirect_check_and_a_slip_is_one_line() -> None:
    cfg = config.FactoryConfig(count=120, families=["F11"], seed=31)
    slips = unchecked = 0
    slipped: collections.Counter[str] = collections.Counter()
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        bundle = compiler.compile_bundle(spec)
        files = giveaways.python_files(bundle)
        check = files["app/redirects.py"]
        assert "def is_trusted_target(" in check and "config.TRUSTED_REDIRECT_HOSTS" in check
        assert "redirects.is_trusted_target(" in "\n".join(files.values())
        pointer = giveaways.PROBES["unused_helper"](bundle, [files], 0)
        assert pointer is None or pointer.path != "app/redirects.py", spec.seed
        fix = {path: str(text) for path, text in bundle.hidden.reference_fix.files.items()}
        assert set(fix) <= set(bundle.workspace), spec.seed  # the fix adds no module
        if set(spec.bug.sites) >= _BOTH:
            slips += 1
            assert set(fix) == {"app/redirects.py"}, spec.seed
            before, after = check.splitlines(), fix["app/redirects.py"].splitlines()
            removed = [line for line in before if line not in after]
            added = [line for line in after if line not in before]
            slip = "fast_path" if "return True" in check else None
            slipped[slip or next(n for n, r in f11_open_redirect.SLIPS.items() if r in check)] += 1
            # one rule line rewritten, or the fast path's two lines dropped
            assert (len(removed), len(added)) in ((1, 1), (2, 0)), (removed, added)
        else:
            unchecked += 1
            assert "app/redirects.py" not in fix, spec.seed
    # both shapes of the bug are drafted often
    assert slips >= 20 and unchecked >= 20, (slips, unchecked)
    assert set(slipped) == set(f11_open_redirect.SLIPS), slipped
