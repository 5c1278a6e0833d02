"""Every built-in domain yields admissible scenarios: all gates (G1–G5) in real sandboxes."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, domains, families, gates

from . import gating


async def test_every_domain_passes_every_gate() -> None:
    fams = sorted(families.FAMILIES)
    bundles = []
    for index, domain_id in enumerate(sorted(domains.DOMAINS)):
        # One family per domain, rotating, so every family meets several domains.
        cfg = config.FactoryConfig(count=1, domains=[domain_id], families=[fams[index % len(fams)]])
        bundles.append(compiler.compile_bundle(author.TemplateAuthor().draft(author.plan(cfg)[0])))
    async with gating.build_backend() as backend:  # gated as a build gates
        reports = await gates.gate_many(backend, bundles, workers=gating.WORKERS, seed=11)
    for bundle, report in zip(bundles, reports, strict=True):
        assert report.admitted, f"{bundle.hidden.labels['domain']}: {report.reason}"
        assert report.probes and all(p.ran and p.score == 0.0 for p in report.probes)
        assert all(p.ending != "app_down" for p in report.probes), report.probes
