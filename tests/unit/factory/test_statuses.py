"""Status spellings (``factory/statuses.py``): functions mix ``HTTPException(403, ...)`` with
``HTTPException(status.HTTP_403_FORBIDDEN, ...)``, each function spelled alike in the
vulnerable app, the reference fix and every trap, and a module left without a use of
``status`` stops importing it."""

from __future__ import annotations

import ast
import collections
import difflib
import re

from a01gym.factory import author, compiler, config, giveaways, layoutdraw, mutator, statuses
from a01gym.factory.layoutspec import Layout

_SERVICES = '''"""Services."""

from fastapi import HTTPException, status

from app import policy


def note_for_read(user, note):
    if note is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "note not found")
    if not policy.can_read(user, note):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "not allowed",
        )
    return note


def note_for_update(user, note):
    if not policy.can_modify(user, note):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "not allowed")
    return note
'''

_OTHER = '"""Other."""\n\nfrom fastapi import HTTPException, status\n\n\n'
_ROUTE = '@router.post("", status_code=status.HTTP_201_CREATED)\n'


def _spec(family: str, share: float, distance: str, seed: int = 28):
    for request in author.plan(config.FactoryConfig(count=300, seed=seed)):
        spec = author.TemplateAuthor().draft(request)
        if spec.bug.family == family and spec.knobs.distance == distance:
            return spec.model_copy(
                update={"layout": spec.layout.model_copy(update={"status_numbers": share})}
            )
    raise AssertionError(f"no {family} draft at distance {distance}")


def test_chosen_functions_refuse_by_number_and_the_unused_import_goes() -> None:
    out = statuses.apply(1, 1.0, {"app/services.py": _SERVICES})["app/services.py"]

    ast.parse(out)
    assert "status." not in out
    assert "raise HTTPException(404, " in out
    assert "raise HTTPException(\n            403,\n" in out  # the argument on a line of its own
    assert out.count("HTTPException(403, ") == 1
    assert "from fastapi import HTTPException\n" in out
    # a module still naming a status elsewhere keeps the import, and the route's status
    routed = _SERVICES + "\n\n" + _ROUTE + "def create():\n    pass\n"
    kept = statuses.apply(1, 1.0, {"app/services.py": routed})["app/services.py"]
    assert "from fastapi import HTTPException, status\n" in kept
    assert _ROUTE in kept and "status.HTTP_403" not in kept


def test_untouched_outside_the_app_and_with_a_share_of_0() -> None:
    assert statuses.apply(1, 1.0, {"tests/test_a.py": _SERVICES}) == {"tests/test_a.py": _SERVICES}
    assert statuses.apply(1, 0.0, {"app/services.py": _SERVICES}) == {"app/services.py": _SERVICES}


def test_each_function_is_drawn_by_name() -> None:
    """Within one module some functions take the number and the others the constant, and the
    same name gets the same spelling whatever else the module holds."""
    mixed: collections.Counter[tuple[bool, bool]] = collections.Counter()
    update = _SERVICES.split("def note_for_update")[1]
    for seed in range(40):
        out = statuses.apply(seed, 0.5, {"app/services.py": _SERVICES})["app/services.py"]
        read_out, update_out = out.split("def note_for_update")
        mixed["HTTP_403" not in read_out, "HTTP_403" not in update_out] += 1
        # the update function alone, after another module's text: spelled as before
        alone = _OTHER + "def note_for_update" + update
        assert statuses.apply(seed, 0.5, {"app/s.py": alone})["app/s.py"].endswith(update_out)
    assert mixed[(True, False)] >= 5 and mixed[(False, True)] >= 5


def _changed(mutation: mutator.Mutation) -> list[str]:
    """The lines the reference fix adds or removes, statuses written as numbers."""
    return [
        re.sub(r"status\.HTTP_(\d{3})_\w+", r"\1", line)
        for path, fixed in mutation.fixed.files.items()
        for line in difflib.unified_diff(
            mutation.vulnerable.files.get(path, "").splitlines(), fixed.splitlines(), n=0
        )
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]


def test_the_reference_fix_refuses_in_its_functions_own_spelling() -> None:
    # F02 at the service distance: the fix restores a refusal in a service function whose
    # siblings refuse too; F01 at route distance: in a handler
    for family, distance in (("F02", "service"), ("F01", "route")):
        plain = _spec(family, 0.0, distance)
        numbered = mutator.mutate(_spec(family, 1.0, distance))
        assert not any("status.HTTP_4" in line for line in _changed(numbered))
        assert _changed(numbered) == _changed(mutator.mutate(plain))
        if family == "F02":
            added = [line for line in _changed(numbered) if line.startswith("+")]
            assert any("HTTPException(403" in line for line in added)


def test_drafts_mix_both_spellings_and_every_draft_draws_a_share() -> None:
    seen: collections.Counter[str] = collections.Counter()
    for request in author.plan(config.FactoryConfig(count=40, seed=29)):
        spec = author.TemplateAuthor().draft(request)
        assert spec.layout.status_numbers in layoutdraw.SPELLING_SHARES
        code = "".join(giveaways.python_files(compiler.compile_bundle(spec)).values())
        seen["number"] += "HTTPException(403" in code
        seen["both"] += "HTTPException(403" in code and "HTTPException(status.HTTP_403" in code
    assert seen["number"] >= 30 and seen["both"] >= 20
    assert Layout().status_numbers == 0.0
