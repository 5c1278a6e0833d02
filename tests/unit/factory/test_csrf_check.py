"""Every F18 app with a form route left to check calls ``csrf_protect``; where no form route is
left secure, the check itself slips.

It used to drop the check, its ``hmac`` import and every call where no form route was secure,
so the vulnerable router differed from every secure app's by a whole function and the fix wrote
it back (``nearest_diff`` found F18's file at 4.73x chance over seeds 31-37). Now the broken
app keeps calling it, and the fix is one rule line rewritten or an early return's two lines
dropped."""

from __future__ import annotations

import collections
import difflib

from a01gym.factory import author, compiler, config, giveaways
from a01gym.factory.families import f18_csrf

_BOTH = {"csrf.archive", "csrf.email"}


def _slip_of(text: str) -> str:
    drawn = [
        name
        for name, (early, rule) in f18_csrf.SLIPS.items()
        if (early and early.split("\n")[0] in text) or (not early and rule in text)
    ]
    assert len(drawn) == 1, drawn
    return drawn[0]


def test_a_broken_f18_app_keeps_its_csrf_check_and_a_slip_is_one_line() -> None:
    cfg = config.FactoryConfig(count=120, families=["F18"], seed=31)
    slips: collections.Counter[str] = collections.Counter()
    skipped = 0
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        bundle = compiler.compile_bundle(spec)
        files = giveaways.python_files(bundle)
        fix = {path: str(text) for path, text in bundle.hidden.reference_fix.files.items()}
        assert len(fix) == 1 and set(fix) <= set(files), spec.seed  # one file, none added
        (path,) = fix
        before, after = files[path], fix[path]
        pointer = giveaways.PROBES["unused_helper"](bundle, [files], 0)
        assert pointer is None or pointer.path != path, spec.seed
        removed = [line for line in before.splitlines() if line not in after.splitlines()]
        added = [line for line in after.splitlines() if line not in before.splitlines()]
        if set(spec.bug.sites) >= _BOTH:
            # both form routes still call the check: a definition and two calls at least
            assert before.count("csrf_protect") >= 3, spec.seed
            slips[_slip_of(before)] += 1
            assert (len(removed), len(added)) in ((1, 1), (2, 0)), (removed, added)
            assert "def csrf_protect(" in after and "hmac.compare_digest(cookie, header)" in after
        else:
            # one route is secure: the broken one skips the check the other runs
            skipped += 1
            assert "def csrf_protect(" in before, spec.seed
            assert after.count("csrf_protect") == before.count("csrf_protect") + 1, spec.seed
    assert sum(slips.values()) >= 20 and skipped >= 20, (slips, skipped)
    assert set(slips) == set(f18_csrf.SLIPS), slips


def test_the_form_check_decorator_lives_in_the_browser_module_where_no_bug_is_fixed() -> None:
    """Its eleven lines in the form router, in one app of four, were a block the nearest app
    lacked in the very file F18 is fixed in; in ``app/browser.py`` the router's mechanisms
    differ by a line a route, and the fix of a route that skips it is that one line."""
    cfg = config.FactoryConfig(count=40, families=["F18"], seed=5)
    decorated = 0
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        bundle = compiler.compile_bundle(spec)
        files = giveaways.python_files(bundle)
        (path,) = bundle.hidden.reference_fix.files
        browser = next(text for name, text in files.items() if name.endswith("/browser.py"))
        assert "def form_check(" not in files[path], spec.seed
        if "@browser.form_check(" not in str(bundle.hidden.reference_fix.files[path]):
            assert "def form_check(" not in browser, spec.seed  # no helper nobody calls
            continue
        decorated += 1
        assert "def form_check(" in browser, spec.seed
        if not set(spec.bug.sites) >= _BOTH:  # the broken route lacks the decorator's line
            after = str(bundle.hidden.reference_fix.files[path]).splitlines()
            diff = difflib.ndiff(files[path].splitlines(), after)
            changed = [line for line in diff if line[:1] in "+-"]
            assert changed == ["+ @browser.form_check(csrf_protect)"], (spec.seed, changed)
    assert decorated >= 5, decorated
