"""Apps whose owner checks are pinned to the caller's tenant (``Layout.owner_in_tenant``) pass
every gate in real sandboxes, in both data-access styles: the pinned check is the same
decision (an owner belongs to the tenant of every record they own), so guards, exploits and
regressions see what the policy says, the reference fix closes the bug and every trap still
fails. F02 with the delete route broken (its fix restores the pruned predicate, pinned), F06
(a record created with a tenant of the client's choosing: the pinned owner check is where
such a row would behave otherwise) and F07 (the list scope)."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, styles
from a01gym.factory.spec import ScenarioSpec
from a01gym.scenario.bundle import Bundle

from . import gating


def _pinned(family: str, site: str | None = None) -> ScenarioSpec:
    """The first draft of ``family`` (with ``site`` among its bug's sites, when given), with
    the owner checks pinned to the tenant."""
    cfg = config.FactoryConfig(count=40, families=[family], seed=5)
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        if site is None or site in spec.bug.sites:
            update = {"owner_in_tenant": True}
            layout = spec.layout.model_copy(update=update)
            return spec.model_copy(update={"layout": layout})
    raise AssertionError(f"no {family} draft with {site}")


async def test_pinned_owner_checks_pass_every_gate_in_both_styles() -> None:
    bundles: list[Bundle] = []
    for family, site in (("F02", "record.delete"), ("F06", None), ("F07", None)):
        spec = _pinned(family, site)
        for name in ("sqlite3", "sqlalchemy"):
            bundle = compiler.compile_bundle(styles.restyled(spec, name))
            policy = bundle.workspace[f"app/{spec.layout.policy}.py"].decode()
            # the predicates are one text in both styles (only the scopes become ORM conditions)
            assert 'user.id and record["tenant_id"] == user.tenant_id' in policy, policy
            bundles.append(bundle)
    await gating.assert_each_passes_every_gate(bundles)
