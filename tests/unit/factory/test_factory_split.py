"""The split holds out whole domains and whole families, deterministically."""

from __future__ import annotations

from a01gym.factory import author, compiler, config, split


def test_eval_holds_out_domains_and_families_entirely() -> None:
    cfg = config.FactoryConfig(count=120)
    rows = []
    for request in author.plan(cfg):
        spec = author.TemplateAuthor().draft(request)
        rows.append(
            (
                spec.domain.id,
                spec.bug.family,
                split.assign_split(spec.domain.id, spec.bug.family, cfg.split),
            )
        )
    train = [r for r in rows if r[2] == "train"]
    evals = [r for r in rows if r[2] == "eval"]
    assert train and evals
    assert not {d for d, _, _ in train} & set(cfg.split.eval_domains)
    assert not {f for _, f, _ in train} & set(cfg.split.eval_families)
    assert {d for d, _, _ in evals} >= set(cfg.split.eval_domains)
    assert {f for _, f, _ in evals} >= set(cfg.split.eval_families)


def test_split_is_stable_across_rebuilds() -> None:
    cfg = config.FactoryConfig(count=24)

    def splits() -> list[tuple[str, str]]:
        out = []
        for request in author.plan(cfg):
            bundle = compiler.compile_bundle(author.TemplateAuthor().draft(request))
            labels = bundle.hidden.labels
            out.append(
                (
                    bundle.manifest.content_hash,
                    split.assign_split(labels["domain"], labels["family"], cfg.split),
                )
            )
        return out

    assert splits() == splits()
