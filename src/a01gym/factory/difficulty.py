"""A scenario's difficulty, from what its compiled fix asks of an agent (issue 28, item 5).

The score used to be a weighted sum of the spec's knobs, and two of them said nothing about
most bugs: ``distance`` moves only record checks (the handler, a service, the SQL), so an F17
debug route drafted at repository distance was fixed in its router all the same, and
``indirection`` only admin guards. Rendering two drafts of each family (a 120-draft plan, seed
5) again with each knob at each value: distance changed the fix of F01, F02, F03 and one F08,
indirection that of F04 and one F17, and nothing else. Yet both paid into the score of every
family, so 22 of 74 ``hard`` scenarios of a 300 build were fixed in at most two lines (an F17
labelled hard was one missing ``Depends``, issue 28).

So the features are measured on the compiled scenario (:func:`measure`):

* ``sites``: how many places the bug sits in;
* ``files``: the files the reference fix changes (what an agent must find and read);
* ``distance``: where the fix lands from the route: 0 in a router module, 1 in a module the
  handler calls (the security, policy or token module), 2 in the data layer or the app's
  setup (repository, models, storage, settings, ``main.py``, the CORS module ``origins``, the
  routers package's ``__init__``, which mounts the routers). The service layer's loaders live
  in the repository module (:mod:`a01gym.factory.appgen`), so a fix there is 2;
* ``indirection``: whether the spec's admin-guard style changes the fix (the spec rendered
  with its family's plainest style gives another fix);
* ``decoys`` and ``hint_level``, from the spec.

The weights (:data:`WEIGHTS`) are set by hand so that a spec drafted ``easy`` (one site, hint
2-4, no decoys, the plainest style) is labelled ``easy`` wherever its family's fix lands; they
are not calibrated against success: that needs an agent that sometimes succeeds, and
``bench/difficulty.py``, which measures it, found none runnable here (docs/families.md,
"Difficulty"). On 300 drafts (seed 28) the score's rank correlation with the fix's changed
lines is 0.42 (0.36 from the knobs alone), with its files 0.39 (0.17); 6 of 31 ``hard``
scenarios are fixed in at most two lines (22 of 74). ``tools/difficulty_probe.py`` measures it.
"""

from __future__ import annotations

import difflib
from typing import Literal, NamedTuple

from a01gym.factory import appgen, families
from a01gym.factory.families.vocabulary import Mode
from a01gym.factory.spec import ScenarioSpec

__all__ = ["WEIGHTS", "Band", "Features", "band", "measure", "score"]

Band = Literal["easy", "medium", "hard"]


class Features(NamedTuple):
    """What the difficulty score is made of (see the module docstring)."""

    sites: int
    files: int
    distance: int
    indirection: bool
    decoys: int
    hint_level: int


WEIGHTS = {
    "site": 0.12,  # each site after the first
    "file": 0.04,  # each file the fix changes after the first
    "distance": (0.0, 0.06, 0.10),  # router module, a module it calls, data layer or setup
    "indirection": 0.08,  # the admin-guard style moves the fix
    "decoy": 0.06,
    "hint": 0.07,  # each hint level below the highest (4)
}
"""Score per feature; ``easy`` is below 0.3, ``medium`` below 0.55, ``hard`` from there. An
``easy`` draft at hint 2 whose fix changes two files in the data layer scores 0.07 x 2 + 0.10
+ 0.04 = 0.28, the most any of the 78 easy drafts of a 300-draft plan (seed 28) scores;
tests/unit/factory/test_difficulty.py checks two plans."""


def score(features: Features) -> float:
    """The difficulty score in [0, 1]."""
    value = WEIGHTS["site"] * (features.sites - 1)
    value += WEIGHTS["file"] * (features.files - 1)
    value += WEIGHTS["distance"][features.distance]
    value += WEIGHTS["indirection"] * features.indirection
    value += WEIGHTS["decoy"] * features.decoys
    value += WEIGHTS["hint"] * (4 - features.hint_level)
    return round(min(1.0, value), 3)


def band(value: float) -> Band:
    """``easy`` / ``medium`` / ``hard`` for a :func:`score`."""
    return "easy" if value < 0.3 else "medium" if value < 0.55 else "hard"


Fix = dict[str, tuple[str | None, str | None]]
"""What a fix changes: path -> the vulnerable and the fixed text (None where absent)."""


def measure(spec: ScenarioSpec, vulnerable: dict[str, str], fixed: dict[str, str]) -> Features:
    """The features of ``spec``, rendered as ``vulnerable`` and ``fixed`` (path -> text)."""
    fix = _fix(vulnerable, fixed)
    plainest = families.family(spec.bug.family).indirections[0]
    moved = False
    if spec.knobs.indirection != plainest:
        plain = spec.model_copy(
            update={"knobs": spec.knobs.model_copy(update={"indirection": plainest})}
        )
        modes = dict.fromkeys(plain.bug.sites, Mode.VULN)
        moved = _delta(fix) != _delta(
            _fix(
                appgen.render_app(plain, appgen.Variant(modes=modes)).files,
                appgen.render_app(plain, appgen.Variant()).files,
            )
        )
    return Features(
        sites=len(spec.bug.sites),
        files=len(fix),
        distance=_distance(spec, fix),
        indirection=moved,
        decoys=len(spec.decoys),
        hint_level=spec.knobs.hint_level,
    )


def _fix(vulnerable: dict[str, str], fixed: dict[str, str]) -> Fix:
    return {
        path: (vulnerable.get(path), fixed.get(path))
        for path in sorted(set(fixed) | set(vulnerable))
        if vulnerable.get(path) != fixed.get(path)
    }


def _distance(spec: ScenarioSpec, fix: Fix) -> int:
    layout = spec.layout
    calls = {layout.security, layout.policy, layout.tokens}
    level = 0
    for path in fix:
        if path.startswith(f"app/{layout.routers}/") and not path.endswith("/__init__.py"):
            continue
        module = path.rsplit("/", 1)[-1].removesuffix(".py")
        level = max(level, 1 if module in calls else 2)
    return level


def _delta(fix: Fix) -> list[tuple[str, tuple[str, ...]]]:
    """The lines a fix removes and adds, per file: two fixes that change the same lines are
    the same fix, whatever the text around them."""
    return [
        (
            path,
            tuple(
                line
                for line in difflib.unified_diff(
                    (before or "").splitlines(), (after or "").splitlines(), lineterm="", n=0
                )
                if line[:1] in "+-" and not line.startswith(("+++", "---"))
            ),
        )
        for path, (before, after) in fix.items()
    ]
