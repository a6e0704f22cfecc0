"""Both directions combined (`MonoAligner.align(combine=)`): union / intersection equal the set
operations on the one-direction outputs, grow-diag by hand and its bounds, the posterior
combination equals the hand-computed mean (phrase CRF and a tiny neural model), a
one-direction model or a bad value gives a one-line error, the monoalign flag and the
evaluate row."""


import pytest

from aligners.data.types import AlignedPair
from aligners.errors import AlignersInputError
from aligners.models.mono.aligner import MonoAligner
from aligners.models.mono.combine import (
    check_combine,
    combine_links,
    combined_blocks,
    grow_diag,
)
from aligners.models.mono.semicrf import PhraseCRFAligner
from tests.test_mono_posterior import PAIRS, _model

SET_COMBINES = ("union", "intersect", "grow-diag")


def _two_way(seed=5):
    return MonoAligner({"s2t": _model(PhraseCRFAligner, 2, 2, seed=seed),
                        "t2s": _model(PhraseCRFAligner, 2, 2, seed=seed + 1)}, kind="phrase")


def _pairs():
    return [AlignedPair(tuple(s), tuple(t)) for s, t in PAIRS]


@pytest.mark.parametrize("decode,threshold", [("viterbi", 0.5), ("posterior", 0.3)])
def test_union_and_intersection_are_set_operations_on_the_directions(decode, threshold):
    al, pairs = _two_way(), _pairs()
    a = al.align(pairs, direction="s2t", decode=decode, threshold=threshold)
    b = al.align(pairs, direction="t2s", decode=decode, threshold=threshold)
    assert any(set(x[1]) != set(y[1]) for x, y in zip(a, b))  # the directions disagree
    u = al.align(pairs, combine="union", decode=decode, threshold=threshold, batch_size=2)
    n = al.align(pairs, combine="intersect", decode=decode, threshold=threshold)
    g = al.align(pairs, combine="grow-diag", decode=decode, threshold=threshold)
    for x, y, uu, nn, gg, p in zip(a, b, u, n, g, pairs):
        assert uu[1] == sorted(set(x[1]) | set(y[1]))
        assert nn[1] == sorted(set(x[1]) & set(y[1]))
        assert set(nn[1]) <= set(gg[1]) <= set(uu[1])
        assert gg[2] == pytest.approx((x[2] + y[2]) / 2)
        for out in (uu, nn, gg):  # blocks cover exactly the links, in source-target order
            cells = {(i, j) for s, k, t, lt in out[0]
                     for i in range(s, s + k) for j in range(t, t + lt)}
            assert cells == set(out[1])
            assert all(i < len(p.src) and j < len(p.tgt) for i, j in out[1])
    # "none" is the one-direction default, unchanged
    assert al.align(pairs, combine="none", decode=decode, threshold=threshold) == a


def test_grow_diag_by_hand():
    a = {(0, 0), (1, 1), (2, 3)}
    b = {(0, 0), (1, 2), (2, 2), (3, 3)}
    # intersection {(0,0)}; (1,1) is diagonal to (0,0) with source 1 unlinked -> added; then
    # (1,2) next to (1,1): target 2 unlinked -> added; (2,2) next to (1,1)/(1,2): source 2
    # unlinked -> added; (2,3) next to (2,2): target 3 unlinked -> added; (3,3) next to (2,3)
    # / (2,2): source 3 unlinked -> added
    assert grow_diag(a, b) == a | b
    # a union link with both words already linked is not added
    assert grow_diag({(0, 0), (1, 1)}, {(0, 0), (1, 1), (0, 1)}) == {(0, 0), (1, 1)}
    # a union link not adjacent to any kept link is not added
    assert grow_diag({(0, 0)}, {(0, 0), (3, 3)}) == {(0, 0)}
    assert combine_links(a, b, "union") == a | b and combine_links(a, b, "intersect") == {(0, 0)}
    with pytest.raises(AlignersInputError, match="union, intersect or grow-diag"):
        combine_links(a, b, "posterior")


def test_combined_blocks_keep_the_blocks_inside_the_links():
    links = {(0, 0), (0, 1), (2, 2)}
    assert combined_blocks(links, [(0, 1, 0, 2)], [(0, 1, 0, 1), (1, 2, 1, 2)]) == [
        (0, 1, 0, 1), (0, 1, 0, 2), (2, 1, 2, 1)]


@pytest.mark.parametrize("threshold", [0.0, 0.25, 0.6])
def test_posterior_combination_is_the_mean_of_the_directions(threshold):
    al, pairs = _two_way(seed=11), _pairs()
    ps = al.posteriors(pairs, direction="s2t")
    pt = al.posteriors(pairs, direction="t2s")
    out = al.align(pairs, combine="posterior", threshold=threshold, batch_size=3)
    for p, a, b, (blocks, links, score) in zip(pairs, ps, pt, out):
        mean = [[(float(a[i, j]) + float(b[i, j])) / 2 for j in range(len(p.tgt))]
                for i in range(len(p.src))]
        want = sorted((i, j) for i in range(len(p.src)) for j in range(len(p.tgt))
                      if mean[i][j] > threshold)
        assert links == want and blocks == [(i, 1, j, 1) for i, j in want]
        assert score == pytest.approx(sum(mean[i][j] for i, j in want) / len(p.src))


def test_posterior_combination_of_a_tiny_neural_model(tmp_path):
    pytest.importorskip("transformers")
    from tests.test_mono_neural import model, pairs, tiny_encoder

    (tmp_path / "enc").mkdir()
    enc = tiny_encoder(tmp_path / "enc")
    al = MonoAligner({"s2t": model(enc, seed=1), "t2s": model(enc, seed=2)}, kind="neural",
                     encoder_precision="fp32")
    ps = pairs()
    a, b = al.posteriors(ps, direction="s2t"), al.posteriors(ps, direction="t2s")
    out = al.align(ps, combine="posterior", threshold=0.3)
    for pa, pb, (_, links, _) in zip(a, b, out):
        assert links == sorted(map(tuple, (((pa + pb) / 2) > 0.3).nonzero().tolist()))
    folder = al.save(tmp_path / "model")  # survives save / load
    from aligners import load
    assert load(folder).align(ps, combine="posterior", threshold=0.3,
                              encoder_precision="fp32") == out


@pytest.mark.parametrize("combine", [*SET_COMBINES, "posterior"])
def test_one_direction_model_rejects_combine(combine):
    for d in ("s2t", "t2s"):
        al = MonoAligner({d: _model(PhraseCRFAligner, 2, 2)}, kind="phrase")
        with pytest.raises(AlignersInputError, match="both directions.*has \\['" + d):
            al.align(_pairs(), combine=combine)
        al.align(_pairs(), combine="none")  # fine


def test_bad_combine_values():
    for bad in ("grow-diag-final", "", None, "Union"):
        with pytest.raises(AlignersInputError, match="combine must be one of"):
            check_combine(bad)
    with pytest.raises(AlignersInputError, match="combine must be one of"):
        _two_way().align(_pairs(), combine="mean")
    with pytest.raises(AlignersInputError, match="not both"):
        _two_way().align(_pairs(), combine="union", direction="t2s")


def test_cli_monoalign_combine(tmp_path, capsys):
    from tests.conftest import monoalign_lines

    al = _two_way(seed=3)
    folder = al.save(tmp_path / "model")
    one = MonoAligner({"s2t": al.models["s2t"]}, kind="phrase").save(tmp_path / "one")
    path = tmp_path / "pairs.txt"
    path.write_text("".join(f"{' '.join(s)} ||| {' '.join(t)}\n" for s, t in PAIRS),
                    encoding="utf-8")

    def run(model, *extra):
        return monoalign_lines(capsys, model, path, *extra)

    s2t, t2s = run(folder, "--direction", "s2t"), run(folder, "--direction", "t2s")
    union = run(folder, "--combine", "union")
    assert union == [" ".join(f"{i}-{j}" for i, j in sorted(
        {tuple(map(int, x.split("-"))) for x in (a + " " + b).split()})) for a, b in zip(s2t, t2s)]
    want = [" ".join(f"{i}-{j}" for i, j in links)
            for _, links, _ in al.align(_pairs(), combine="posterior", threshold=0.2)]
    assert run(folder, "--combine", "posterior", "--threshold", "0.2") == want
    assert run(folder, "--combine", "grow-diag", "--blocks")[0].count(" ||| ") == 1
    with pytest.raises(AlignersInputError, match="both directions"):
        run(one, "--combine", "intersect")
    with pytest.raises(SystemExit):  # argparse choices
        run(folder, "--combine", "mean")
    capsys.readouterr()


def test_evaluate_writes_the_combined_row(tmp_path, capsys):
    """`evaluate.py ... model.combine=grow-diag` scores the combination as its own
    metrics.json row; training one direction with a combine set fails before training."""
    from aligners import load
    from aligners.run import evaluate, train
    from aligners.training.mono import _eval_splits
    from tests.conftest import shared_path
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    small = ["experiment=tokencrf_msr06", "data.train_limit=12", "data.test_limit=6",
             "training.max_iter=3"]
    with pytest.raises(AlignersInputError, match="both directions"):
        train(_cfg("train", [*small, "model.combine=union"], tmp_path / "bad"))
    assert not (tmp_path / "bad" / "model").exists()
    train(_cfg("train", [*small, "training.directions=[s2t,t2s]"], tmp_path))
    cfg = _cfg("evaluate", [*small, f"ckpt_path={tmp_path / 'model'}",
                            "model.combine=grow-diag"], tmp_path / "eval")
    metrics = evaluate(cfg)
    capsys.readouterr()
    assert {"test/s2t", "test/t2s", "test/union", "test/grow-diag"} <= set(metrics)
    pairs = _eval_splits(cfg)["test"]
    want = load(tmp_path / "model").align(pairs, combine="grow-diag")
    got = (tmp_path / "eval" / "predictions.test.grow-diag.pharaoh").read_text().splitlines()
    assert got == [" ".join(f"{i}-{j}" for i, j in links) for _, links, _ in want]


@pytest.mark.parametrize("experiment", ["neural_multimwa_wiki", "neural_msr06",
                                        "neural_edbppp"])
def test_chosen_experiments_train_both_directions_for_their_combine(experiment, tmp_path):
    """The experiments whose dev / selection choice was a combination train both directions
    (else `train` would refuse the combine before training)."""
    from aligners.training.mono import check_cfg
    from tests.test_mono_training import _cfg

    cfg = _cfg("train", [f"experiment={experiment}"], tmp_path)
    check_cfg(cfg)
    check_combine(cfg.model.combine, cfg.training.directions)
    assert cfg.model.combine == "posterior" and sorted(cfg.training.directions) == ["s2t", "t2s"]
