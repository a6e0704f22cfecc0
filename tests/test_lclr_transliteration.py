"""LCLR transliteration task: DP == HiGHS ILP == brute force; reader; protocol; save/load; CLI."""

import numpy as np
import pytest

from aligners.data.labeled import NamePair, read_news_translit
from aligners.data.paths import data_root
from aligners.errors import AlignersInputError
from aligners.ilp import brute_force_ilp, feasible, solve_ilp
from aligners.models.lclr import make_task, save_lclr
from aligners.models.lclr.model import infer, train_lclr, train_two_stage, variable_scores
from aligners.models.lclr.transliteration import (
    TransliterationTask,
    monotone_matching,
    rank_candidates,
)


@pytest.mark.parametrize("seed", range(15))
def test_dp_equals_ilp_and_brute_force(seed):
    rng = np.random.default_rng(seed)
    n1, n2 = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    task = TransliterationTask(solver="ilp")
    inst = task.instance("abcd"[:n1], "wxyz"[:n2])
    scores = rng.normal(size=n1 * n2)
    cons = task.constraints(inst)
    h_dp = monotone_matching(scores.reshape(n1, n2)).reshape(-1)
    h_ilp = solve_ilp(scores, cons).h
    oracle = brute_force_ilp(scores, cons)
    assert feasible(h_dp, cons) and feasible(h_ilp, cons)
    assert scores @ h_dp == pytest.approx(oracle.value)
    assert scores @ h_ilp == pytest.approx(oracle.value)


def test_dp_is_monotone_one_to_one():
    h = monotone_matching(np.array([[1.0, 5.0], [5.0, 1.0]]))
    assert h.sum() == 1 and h[0, 1] + h[1, 0] == 1  # crossing pair forbidden
    assert monotone_matching(-np.ones((3, 2))).sum() == 0
    with pytest.raises(ValueError, match="I, J"):
        monotone_matching(np.ones(3))


def _toy_pairs():
    pos = [("dan", "דן"), ("tal", "טל"), ("ben", "בן"), ("lev", "לב"), ("nadav", "נדב"),
           ("dana", "דנה"), ("natan", "נתן"), ("adam", "אדם")]
    neg = [(pos[i][0], pos[j][1]) for i in range(len(pos)) for j in range(len(pos)) if i != j]
    return pos + neg[::3], [1] * len(pos) + [0] * len(neg[::3]), pos


def test_train_rank_save_load_roundtrip(tmp_path):
    pairs, labels, pos = _toy_pairs()
    task = make_task("transliteration")
    insts = [task.instance(a, b) for a, b in pairs]
    align = task.romanization_weights()
    task.features.growing = False
    F = len(task.features)
    align = np.pad(align, (0, F - len(align)))
    two = train_two_stage(task, insts, labels, align_weights=align, num_features=F, C=1.0)
    joint, hist = train_lclr(task, insts, labels, w0=two.weights, num_features=F, C=1.0)
    assert hist["objective"][-1] <= hist["objective"][0]
    ranks = rank_candidates(joint, [s for s, _ in pos], [t for _, t in pos])
    assert ranks.shape == (len(pos),) and ranks.min() >= 1
    for clf, system in ((joint, "lclr"), (two, "two_stage")):
        path = save_lclr(tmp_path / system, clf, system=system)
        import aligners
        back = aligners.export.load(path)
        assert back.task.name == "transliteration"
        for a, b in pairs[:6]:
            assert back.score(back.task.instance(a, b)) == pytest.approx(
                clf.score(clf.task.instance(a, b)))
        assert back.explain(back.task.instance("dan", "דן")) == clf.explain(
            clf.task.instance("dan", "דן"))
    # the ILP and the DP give the same f on the trained model
    ilp = make_task("transliteration", features=task.features, solver="ilp")
    for inst in insts[:10]:
        assert infer(ilp, inst, joint.weights)[1] == pytest.approx(
            infer(task, inst, joint.weights)[1])
        assert variable_scores(inst, joint.weights).shape == (inst.num_vars,)


def test_cli_classify(tmp_path, capsys):
    from aligners.cli import main
    pairs, labels, _ = _toy_pairs()
    task = make_task("transliteration")
    insts = [task.instance(a, b) for a, b in pairs]
    task.features.growing = False
    joint, _ = train_lclr(task, insts, labels, w0=np.zeros(len(task.features)),
                          num_features=len(task.features), C=1.0)
    save_lclr(tmp_path / "m", joint, system="lclr")
    inp = tmp_path / "in.tsv"
    inp.write_text("dan\tדן\ntal\tנדב\n", encoding="utf-8")
    assert main(["classify", "--task", "transliteration", "--model", str(tmp_path / "m"),
                 "--input", str(inp), "--explain"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.split("\t")[0] in ("0", "1") for line in out)
    assert float(out[0].split("\t")[1]) == pytest.approx(joint.score(task.instance("dan", "דן")),
                                                         abs=1e-5)
    bad = tmp_path / "bad.tsv"
    bad.write_text("dan\tדן\nonly-one-column\n", encoding="utf-8")
    assert main(["classify", "--model", str(tmp_path / "m"), "--input", str(bad)]) == 2
    assert "bad.tsv:2:" in capsys.readouterr().err
    assert main(["classify", "--task", "paraphrase", "--model", str(tmp_path / "m"),
                 "--input", str(inp)]) == 2
    assert main(["classify", "--model", str(tmp_path / "nope"), "--input", str(inp)]) == 2


def test_reader_errors(tmp_path):
    f = tmp_path / "x.xml"
    f.write_text("<C><Name ID='1'><SourceName>A</SourceName></Name></C>", encoding="utf-8")
    with pytest.raises(AlignersInputError, match="TargetName"):
        read_news_translit(f)
    f.write_text("<C><Name>", encoding="utf-8")
    with pytest.raises(AlignersInputError, match="x.xml:1: invalid XML"):
        read_news_translit(f)
    with pytest.raises(ValueError, match="empty name"):
        TransliterationTask().instance("  ", "דן")
    with pytest.raises(ValueError, match="solver"):
        TransliterationTask(solver="greedy")


@pytest.mark.skipif(not (data_root() / "news2012-translit-enhe").exists(),
                    reason="shipped data ../shared/data absent")
def test_protocol_shapes():
    from aligners.data.datasets import load
    from aligners.training.lclr import translit_protocol
    pairs, labels, test = translit_protocol(load("news2012-translit-enhe", "train"),
                                            load("news2012-translit-enhe", "dev"),
                                            positives=250, negative_fraction=0.1,
                                            test_size=300, seed=1)
    assert sum(labels) == 250 and len(labels) - 250 == round(0.1 * 250 * 249)
    assert len(test) == 300 and len({t for _, t in test}) == 300
    pos = set(pairs[:250])
    assert not any(p in pos for p in pairs[250:])  # a pairing of two different names


@pytest.mark.skipif(not (data_root() / "news2012-translit-enhe").exists(),
                    reason="shipped data ../shared/data absent")
def test_experiment_runs_end_to_end(tmp_path):
    """`train.py experiment=lclr_transliteration` on a tiny slice: metrics.json + models."""
    import json
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from aligners.run import train
    configs = Path(__file__).resolve().parents[1] / "configs"
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[
            "experiment=lclr_transliteration", "data.train_positives=20", "data.test_names=10",
            "model.C_grid=[0.1,1.0]", "model.cv_folds=2", "model.max_outer=2",
            "data.cv_candidates=15",
            f"+paths_override={tmp_path}"])
    cfg = OmegaConf.to_container(cfg, resolve=False)
    cfg["paths"] = {"data_root": None, "output_dir": str(tmp_path)}
    cfg.pop("paths_override")
    cfg["logger"] = None
    metrics = train(OmegaConf.create(cfg))
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(metrics))
    test = on_disk["test"]
    assert test["seeds"] == 3  # the default model.seeds: mean ± sd over seeds 1234..1236
    for k in ("lclr_acc", "lclr_mrr", "two_stage_acc", "two_stage_mrr"):
        per_seed = [test[f"{k}_seed{s}"] for s in (1234, 1235, 1236)]
        assert all(0.0 <= v <= 1.0 for v in per_seed)
        assert test[k] == pytest.approx(np.mean(per_seed))
        assert test[f"{k}_sd"] == pytest.approx(np.std(per_seed, ddof=1))
    assert (tmp_path / "lclr" / "model.safetensors").is_file()
    assert (tmp_path / "two_stage" / "features.json").is_file()


def test_rank_with_distractors_and_romanization_feature():
    pairs, labels, pos = _toy_pairs()
    task = make_task("transliteration", romanization_feature=True)
    assert task.config()["romanization_feature"] is True
    inst = task.instance("dan", "דן")
    rom = task.features.index("rom")
    on = sorted(set(inst.var_rows[inst.var_cols == rom].tolist()))
    assert on == [0 * 2 + 0, 2 * 2 + 1]  # d-ד and n-ן are in the table; a-ד etc. are not
    insts = [task.instance(a, b) for a, b in pairs]
    task.features.growing = False
    joint, _ = train_lclr(task, insts, labels, w0=np.zeros(len(task.features)),
                          num_features=len(task.features), C=1.0)
    src, cand = [s for s, _ in pos], [t for _, t in pos]
    plain = rank_candidates(joint, src, cand)
    more = rank_candidates(joint, src, cand, distractors=["שלום", "דני"])
    assert np.all(more >= plain) and np.all(more <= plain + 2)
    from aligners.models.lclr.transliteration import grid_ranks
    pool = cand + ["שלום", "דני"]
    grid = [[task.instance(a, c) for c in pool] for a in src]
    assert grid_ranks(joint, grid).tolist() == more.tolist()  # prebuilt == on the fly
    # a distractor identical to an answer ties with it, and ties count against the answer
    assert rank_candidates(joint, src[:1], cand[:1], distractors=[cand[0]])[0] == 2


def test_translit_distractors_come_from_unused_train_names():
    from aligners.training.lclr import translit_distractors

    def P(s, t):  # noqa: N802
        return NamePair(id=s, source=s, targets=(t,))

    train = [P("Dan", "דן"), P("Tal", "טל"), P("Ben", "בן"), P("Lev", "לב"), P("dan", "דני")]
    got = translit_distractors(train, [("dan", "דן"), ("tal", "טל")], count=2, seed=0)
    assert sorted(got) == sorted(["בן", "לב"])  # "dan"/"דני" shares a used source name
    with pytest.raises(AlignersInputError, match="only 2 unused"):
        translit_distractors(train, [("dan", "דן"), ("tal", "טל")], count=3, seed=0)
