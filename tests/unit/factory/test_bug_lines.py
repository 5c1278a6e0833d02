"""F12's and F15's bugs are one line of the structure their app draws.

A vulnerable app whose bug file lacks a block that secure apps have, or states its check in a
form no secure app uses, is found by diffing it against the most similar other app
(``nearest_diff``, factory/giveaways.py): F12 read 2.8x chance where its regex bug was drawn
apart from the structure, F15 3.6x where both token checks were removed outright
(docs/families.md). Here, over enough seeds to draw every structure, the reference fix changes
(or removes) one line of F12's app, and replaces each of F15's broken checks with the refusal
of that check (one line by two: the condition and its ``return None``), in one file. The gates
(tests/integration/test_factory_fix_shapes.py) show the exploits still pass on these apps.
"""

from __future__ import annotations

import difflib
import re

from a01gym.factory import author, compiler, config
from a01gym.scenario.bundle import Bundle

SEEDS = range(1, 17)


def _bundle(family: str, seed: int) -> Bundle:
    cfg = config.FactoryConfig(count=1, families=[family], seed=seed)
    return compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[0]))


def _changes(bundle: Bundle) -> dict[str, tuple[list[str], list[str]]]:
    """Per file the reference fix changes: (lines removed, lines added)."""
    out = {}
    for path, fixed in bundle.hidden.reference_fix.files.items():
        before = bundle.workspace[path].decode().splitlines()
        diff = list(difflib.ndiff(before, (fixed or "").splitlines()))
        out[path] = (
            [line[2:] for line in diff if line.startswith("- ")],
            [line[2:] for line in diff if line.startswith("+ ")],
        )
    return out


def test_f12_bug_is_one_line_of_each_structure_and_keeps_the_front_end_setting_in_use() -> None:
    forms: set[str] = set()
    for seed in SEEDS:
        bundle = _bundle("F12", seed)
        ((path, (removed, added)),) = _changes(bundle).items()
        assert len(removed) == 1 and len(added) <= 1, (seed, removed, added)
        if not added:  # a regex for "preview" hosts beside the front end's list
            forms.add("main, preview")
            wide = r'\s+allow_origin_regex=r"https://\.\*example\\\.test",'
            assert re.fullmatch(wide, removed[0]), removed
            continue
        if path == "app/config.py":
            forms.add("config")
            assert removed[0].endswith('(*FRONTEND_ORIGINS, "*")'), removed
            continue
        assert path == "app/origins.py"
        line = removed[0].strip()
        if "re.escape" in added[0]:  # the regex built from the setting: the bug builds it too
            forms.add("regex")
            assert "re.escape(config.FRONTEND_ORIGINS[0]" in line, line
        elif "allow_origin_regex" in added[0]:  # a literal: the bug's is a literal too
            forms.add("literal")
            assert re.fullmatch(r'allow_origin_regex=r"https://\.\*example\\\.test",', line)
        else:
            forms.add("main")
            assert line == 'allow_origins=[*config.FRONTEND_ORIGINS, "*"],', line
    assert forms == {"main", "main, preview", "config", "regex", "literal"}


def test_f15_bug_records_each_check_it_skips_where_the_fix_refuses() -> None:
    structures: set[str] = set()
    for seed in SEEDS:
        bundle = _bundle("F15", seed)
        ((path, (removed, added)),) = _changes(bundle).items()
        sites = bundle.hidden.labels["sites"].split(",")
        text = bundle.workspace[path].decode()
        assert "def claims_of" in text
        structures.add("helpers" if "def _signature_ok(" in text else "inline")
        assert len(removed) == len(sites) and len(added) == 2 * len(sites), (seed, removed)
        assert all(re.match(r'\s+claims\["(verified|expired)"\] = ', line) for line in removed)
        assert added.count("        return None") == len(sites), added
    assert structures == {"inline", "helpers"}
