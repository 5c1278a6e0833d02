"""Generated modules leave blank lines as a formatter would (``codetext.tidy``): a run of blank
lines where a template block rendered empty, or where a mode dropped a check, pointed at the
bug (issue 28: "odd blank lines sit where a check was removed")."""

from __future__ import annotations

import ast
import re

from a01gym.factory import author, config, mutator
from a01gym.factory.codetext import tidy

_LOOSE = re.compile(r"\n\n\n+[ \t]|\n\n\n\n")


def test_runs_collapse_to_one_in_a_block_and_two_at_top_level_but_not_inside_strings() -> None:
    source = (
        "class A:\n    def a(self) -> None:  \n        pass\n\n\n\n    def b(self) -> str:\n"
        '        return """one\n\n\n\ntwo"""\n\n\n\n\ndef c() -> None:\n    pass\n\n\n'
    )

    tidied = tidy(source)

    assert tidied == (
        "class A:\n    def a(self) -> None:\n        pass\n\n    def b(self) -> str:\n"
        '        return """one\n\n\n\ntwo"""\n\n\ndef c() -> None:\n    pass\n'
    )
    assert ast.dump(ast.parse(tidied)) == ast.dump(ast.parse(source))


def test_no_rendering_of_any_family_has_a_loose_blank_line_run() -> None:
    """Every rendering (fixed, vulnerable, each trap) of 42 drafts, two of every family."""
    loose = []
    for request in author.plan(config.FactoryConfig(count=42, seed=23)):
        mutation = mutator.mutate(author.TemplateAuthor().draft(request))
        for rendered in (mutation.fixed, mutation.vulnerable, *mutation.traps.values()):
            loose += [
                f"{request.family} {path}"
                for path, text in rendered.files.items()
                if path.endswith(".py") and _LOOSE.search(text)
            ]
    assert not loose
