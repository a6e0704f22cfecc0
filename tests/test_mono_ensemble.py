"""Ensembles of monolingual aligners (`aligners.models.mono.ensemble`): the links equal the
hand-computed mean of the members' link posteriors (every direction, or one), save / load and
`load_aligners` give the same output (a tiny neural ensemble too), bad ensembles and options
fail with one line, the repeated monoalign `--model` flag, `evaluate ckpt_path=[A,B]`, and
`training.members` trains members equal to the stand-alone runs."""

import pytest
import torch

from aligners import load
from aligners.data.types import AlignedPair
from aligners.errors import AlignersInputError
from aligners.models.mono.aligner import MonoAligner
from aligners.models.mono.ensemble import MonoEnsemble, load_aligners
from aligners.models.mono.semicrf import PhraseCRFAligner
from tests.test_mono_posterior import PAIRS, _model


def _pairs():
    return [AlignedPair(tuple(s), tuple(t)) for s, t in PAIRS]


def _member(seed, directions=("s2t", "t2s")):
    return MonoAligner({d: _model(PhraseCRFAligner, 2, 2, seed=seed + k)
                        for k, d in enumerate(directions)}, kind="phrase")


def _hand(members, pairs, threshold, directions=None):
    """Per pair the sorted links whose mean posterior over the members' `directions` (all of
    each member's when None) exceeds `threshold`, and that mean, element by element."""
    mats = [m.posteriors(pairs, direction=d) for m in members
            for d in (directions or m.directions) if d in m.models]
    out = []
    for n, p in enumerate(pairs):
        mean = [[sum(float(x[n][i, j]) for x in mats) / len(mats) for j in range(len(p.tgt))]
                for i in range(len(p.src))]
        out.append((sorted((i, j) for i in range(len(p.src)) for j in range(len(p.tgt))
                           if mean[i][j] > threshold), mean))
    return out


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.6])
def test_links_are_the_mean_of_every_members_posteriors(threshold):
    members, pairs = [_member(1), _member(7), _member(13, ("t2s",))], _pairs()
    ens = MonoEnsemble(members)
    assert ens.directions == ["s2t", "t2s"]
    got = ens.align(pairs, combine="posterior", threshold=threshold, batch_size=3)
    for (blocks, links, score), (want, mean) in zip(got, _hand(members, pairs, threshold)):
        assert links == want and blocks == [(i, 1, j, 1) for i, j in want]
        assert score == pytest.approx(sum(mean[i][j] for i, j in want) / len(mean))
    # one direction: only the members that have it, only that direction's posteriors
    for d in ("s2t", "t2s"):
        one = ens.align(pairs, direction=d, threshold=threshold)
        assert [x[1] for x in one] == [w for w, _ in _hand(members, pairs, threshold, [d])]
    assert [x[1] for x in ens.align(pairs, threshold=threshold)] == [
        x[1] for x in ens.align(pairs, direction="s2t", threshold=threshold)]
    # the members disagree, so the mean is not any single member's output
    single = [x[1] for x in members[0].align(pairs, combine="posterior", threshold=0.3)]
    assert single != [x[1] for x in ens.align(pairs, combine="posterior", threshold=0.3)]


def test_save_load_and_load_aligners_round_trip(tmp_path):
    members, pairs = [_member(2), _member(5, ("s2t",))], _pairs()
    ens = MonoEnsemble(members)
    want = ens.align(pairs, combine="posterior", threshold=0.25)
    folder = ens.save(tmp_path / "ens", config={"note": "x"})
    back = load(folder)
    assert isinstance(back, MonoEnsemble) and back.meta == {"note": "x"}
    assert [m.directions for m in back.members] == [["s2t", "t2s"], ["s2t"]]
    assert back.align(pairs, combine="posterior", threshold=0.25) == want
    a, b = members[0].save(tmp_path / "a"), members[1].save(tmp_path / "b")
    assert load_aligners([a, b]).align(pairs, combine="posterior", threshold=0.25) == want
    assert isinstance(load_aligners([a]), MonoAligner)  # one folder: what aligners.load gives
    three = load_aligners([folder, _member(9).save(tmp_path / "c")])  # members flattened
    assert len(three.members) == 3


def test_tiny_neural_ensemble_survives_save_load(tmp_path):
    pytest.importorskip("transformers")
    from tests.test_mono_neural import model, pairs, tiny_encoder

    (tmp_path / "enc").mkdir()
    enc = tiny_encoder(tmp_path / "enc")
    members = [MonoAligner({"s2t": model(enc, seed=s, finetune=True),
                            "t2s": model(enc, seed=s + 1, finetune=True)}, kind="neural",
                           encoder_precision="fp32") for s in (1, 3)]
    ens, ps = MonoEnsemble(members), pairs()
    want = ens.align(ps, combine="posterior", threshold=0.3)
    assert [x[1] for x in want] == [w for w, _ in _hand(members, ps, 0.3)]
    back = load(ens.save(tmp_path / "ens"))
    assert back.align(ps, combine="posterior", threshold=0.3, encoder_precision="fp32") == want


def test_bad_ensembles_and_options(tmp_path):
    pairs = _pairs()
    with pytest.raises(AlignersInputError, match="at least two"):
        MonoEnsemble([_member(1)])
    with pytest.raises(AlignersInputError, match="at least two"):
        MonoEnsemble([_member(1), "not a model"])
    ens = MonoEnsemble([_member(1, ("s2t",)), _member(2, ("s2t",))])
    with pytest.raises(AlignersInputError, match="no member has the 't2s'"):
        ens.align(pairs, direction="t2s")
    with pytest.raises(AlignersInputError, match="mean posterior only"):
        ens.align(pairs, combine="union")
    with pytest.raises(AlignersInputError, match="not both"):
        ens.align(pairs, combine="posterior", direction="s2t")
    with pytest.raises(AlignersInputError, match="threshold"):
        ens.align(pairs, threshold=1.0)
    from aligners.export import write_model
    bad = write_model(tmp_path / "bad", kind="mono-ensemble", tensors={},
                      config={"members": [{"kind": "mono-phrase-crf"}]})
    with pytest.raises(AlignersInputError, match="two or more"):
        load(bad)


def test_cli_monoalign_repeated_model(tmp_path, capsys):
    from tests.conftest import monoalign_lines

    members = [_member(4), _member(8)]
    a, b = members[0].save(tmp_path / "a"), members[1].save(tmp_path / "b")
    path = tmp_path / "pairs.txt"
    path.write_text("".join(f"{' '.join(s)} ||| {' '.join(t)}\n" for s, t in PAIRS),
                    encoding="utf-8")
    want = [" ".join(f"{i}-{j}" for i, j in links) for _, links, _ in
            MonoEnsemble(members).align(_pairs(), combine="posterior", threshold=0.2)]
    got = monoalign_lines(capsys, a, path, "--model", str(b), "--combine", "posterior",
                          "--threshold", "0.2")
    assert got == want
    saved = MonoEnsemble(members).save(tmp_path / "ens")  # a saved ensemble: the same
    assert monoalign_lines(capsys, saved, path, "--combine", "posterior",
                           "--threshold", "0.2") == want
    with pytest.raises(AlignersInputError, match="no model folder"):
        monoalign_lines(capsys, a, path, "--model", str(tmp_path / "missing"))
    with pytest.raises(AlignersInputError, match="not 'union'"):
        monoalign_lines(capsys, a, path, "--model", str(b), "--combine", "union")


def test_members_train_like_stand_alone_runs_and_evaluate_takes_a_list(tmp_path, capsys):
    from aligners.run import check, evaluate, train
    from aligners.training.mono import member_cfgs
    from tests.conftest import shared_path
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    small = ["experiment=tokencrf_msr06", "data.train_limit=12", "data.test_limit=6"]
    train(_cfg("train", [*small, "training.max_iter=2"], tmp_path / "two"))
    train(_cfg("train", [*small, "training.max_iter=3"], tmp_path / "three"))
    train(_cfg("train", [*small, "training.members=[{max_iter: 2},{max_iter: 3}]"],
               tmp_path / "ens"))
    capsys.readouterr()
    ens = load(tmp_path / "ens" / "model")
    assert isinstance(ens, MonoEnsemble) and len(ens.members) == 2
    for member, alone in zip(ens.members, ("two", "three")):
        ref = load(tmp_path / alone / "model")
        for k, v in ref.models["s2t"].state_dict().items():
            assert torch.equal(member.models["s2t"].state_dict()[k], v), k
    # evaluate the two stand-alone runs as an ensemble: the rows equal the saved ensemble's
    paths = f"ckpt_path=[{tmp_path / 'two' / 'model'},{tmp_path / 'three' / 'model'}]"
    got = evaluate(_cfg("evaluate", [*small, paths], tmp_path / "eval"))
    saved = evaluate(_cfg("evaluate", [*small, f"ckpt_path={tmp_path / 'ens' / 'model'}"],
                          tmp_path / "eval2"))
    capsys.readouterr()
    assert got["test/s2t"] == saved["test/s2t"]
    # bad members / lists: one line each
    for bad, msg in [("training.members=[{max_iter: 2}]", "two or more"),
                     ("training.members=[{max_iter: 2},{nope: 1}]", "unknown training keys"),
                     ("training.members=[{max_iter: 2},{max_iter: 0}]", "max_iter"),
                     ("training.members=[{max_iter: 2},{model: {threshold: 0.3}}]",
                      "not \\['threshold'\\]"),
                     ("training.members=[{max_iter: 2},{model: {nope: 1}}]", "nope")]:
        with pytest.raises(AlignersInputError, match=msg):
            member_cfgs(_cfg("train", [*small, bad], tmp_path / "bad"))
    one = f"ckpt_path=[{tmp_path / 'two' / 'model'}]"
    with pytest.raises(AlignersInputError, match="two or more"):
        check(_cfg("evaluate", [*small, one], tmp_path / "bad"), evaluating=True)


def test_a_task_without_ensembles_refuses_a_list(tmp_path):
    from aligners.run import check
    from tests.test_mono_training import _cfg

    a = _member(1).save(tmp_path / "a")
    cfg = _cfg("evaluate", ["experiment=reorder_dev", f"ckpt_path=[{a},{a}]"], tmp_path / "o")
    with pytest.raises(AlignersInputError, match="evaluates one model"):
        check(cfg, evaluating=True)


@pytest.mark.parametrize("experiment", ["neural_multimwa_wiki", "neural_newsela", "neural_arxiv"])
def test_wiki_experiments_train_the_dev_chosen_ensemble(experiment, tmp_path):
    """The Wiki experiments (and the out-of-domain rows, which train the same model) train
    the four-member ensemble chosen on wiki dev, each member with both directions."""
    from aligners.training.mono import member_cfgs
    from tests.test_mono_training import _cfg

    ms = member_cfgs(_cfg("train", [f"experiment={experiment}"], tmp_path))
    assert [m.training.nonident_fn_cost for m in ms] == [3.0, 5.0, 8.0, 8.0]
    assert [(m.model.max_src_len, m.model.max_tgt_len) for m in ms] == [(3, 3)] * 3 + [(4, 4)]
    assert all(m.training.members is None and list(m.training.directions) == ["s2t", "t2s"]
               and m.model.finetune and m.model.combine == "posterior" for m in ms)


def test_members_model_overrides_reach_the_trained_members(tmp_path, capsys):
    """`training.members` with a member's `model` dict (tiny fine-tuned neural models, few
    pairs): the saved ensemble's members have their own span lengths, and the ensemble
    decodes as the hand mean of their posteriors."""
    pytest.importorskip("transformers")
    from omegaconf import open_dict

    from aligners.run import train
    from tests.conftest import shared_path
    from tests.test_mono_neural import tiny_encoder
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    (tmp_path / "enc").mkdir()
    enc = tiny_encoder(tmp_path / "enc")
    cfg = _cfg("train", ["experiment=neural_msr06", "data.train_limit=4", "data.test_limit=2",
                         "training.select=2", "training.epochs=1", "model.proj=8",
                         "model.hidden=8", "model.finetune=true", "training.directions=[s2t]",
                         "model.combine=none",
                         "training.members=[{},{model: {max_src_len: 2, max_tgt_len: 1}}]"],
               tmp_path / "run")
    with open_dict(cfg):
        cfg.model.encoder = {"path": enc}
    train(cfg)
    capsys.readouterr()
    ens = load(tmp_path / "run" / "model")
    spans = [(m.models["s2t"].max_src_len, m.models["s2t"].max_tgt_len) for m in ens.members]
    assert spans == [(cfg.model.max_src_len, cfg.model.max_tgt_len), (2, 1)]
    from tests.test_mono_neural import pairs
    ps = pairs()
    for m in ens.members:
        m.encoder_precision = "fp32"
    got = ens.align(ps, direction="s2t", threshold=0.3)
    assert [x[1] for x in got] == [w for w, _ in _hand(ens.members, ps, 0.3, ["s2t"])]
