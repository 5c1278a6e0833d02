"""Scenarios in the ORM relationship shape, for the gate and probe tests."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import Layout
from a01gym.factory.styles import orm_relationship
from a01gym.scenario.bundle import Bundle

RELATIONSHIP_SITES = (("F07", "record.list"), ("F08", "record.export"))
"""The families the relationship shape is attached to, with the site it reads through."""


def relationship_bundle(
    family: str, site: str, fix: str, trap: str | None = "over_filter"
) -> Bundle:
    """The first ORM template scenario of ``family`` whose ``site`` reads its records through
    the relationship, whose condition takes the form ``fix``, and whose traps include ``trap``
    (by default the over-fix, ``over_filter``: hiding children the caller may see)."""
    cfg = config.FactoryConfig(count=60, families=[family], seed=5)
    for request in author.plan(cfg):
        spec = styles.restyled(author.TemplateAuthor().draft(request), "sqlalchemy")
        spec = spec.model_copy(update={"layout": Layout()})  # callers read app/repository.py
        if (
            site in spec.bug.sites
            and (trap is None or trap in spec.traps)
            and orm_relationship.drawn(spec, site)
            and orm_relationship.fix(spec) == fix
        ):
            return compiler.compile_bundle(spec)
    raise AssertionError(f"no {family} scenario reads {site} through the relationship ({fix})")
