"""Each of F15, F18, F19 and F21 brings a module no variant changes
(:mod:`a01gym.factory.families.plumbing`), the same text in every app that serves the family
(one per data-access style and, for F18, with or without the e-mail form and the decorator
that runs a form route's check), and never in one that does not; no reference fix edits it (a
trap that deletes a route may).

Why: an app's broken file matches no other app's, so the app ``nearest_diff`` compares it
with was chosen by the rest of the app and lacked the family's area a third of the time, and
there the family's files were new and the probe named one (F18 at 5.4x chance over seeds
31-34). A file shared by every app that serves the area makes those apps the nearest."""

from __future__ import annotations

import collections

from a01gym.factory import author, compiler, config, giveaways

MODULES = {
    "F15": "app/jwt_codec.py",
    "F18": "app/browser.py",
    "F19": "app/listings.py",
    "F21": "app/monitor_agent.py",
}


def test_an_app_serving_a_family_carries_its_module_unchanged_by_the_bug() -> None:
    cfg = config.FactoryConfig(count=126, seed=31)
    texts: dict[str, set[tuple[str, str]]] = collections.defaultdict(set)
    served = collections.Counter[str]()
    for request in author.plan(cfg):
        bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
        labels = bundle.hidden.labels
        serving = {labels["family"], *filter(None, labels.get("companions", "").split(","))}
        files = giveaways.python_files(bundle)
        touched = set(bundle.hidden.reference_fix.files)
        style = labels.get("data_access", "sqlite3")
        for family, path in MODULES.items():
            assert path not in touched, (family, request.seed)
            if path in files:
                assert family in serving, (family, request.seed)
                served[family] += 1
                texts[family].add((style, giveaways.normalise(files[path])))
            else:
                assert family not in serving or family != labels["family"], (family, request.seed)
    assert all(served[family] >= 20 for family in MODULES), served
    per_style = {
        family: collections.Counter(s for s, _ in found) for family, found in texts.items()
    }
    assert max(per_style["F15"].values()) == 1 and len({text for _, text in texts["F15"]}) == 1, (
        texts["F15"]
    )
    assert max(per_style["F21"].values()) == 1 and len({text for _, text in texts["F21"]}) == 1, (
        texts["F21"]
    )
    assert max(per_style["F19"].values()) == 1, per_style["F19"]
    # with or without the e-mail form, with or without the form-check decorator
    assert max(per_style["F18"].values()) <= 4, per_style["F18"]
