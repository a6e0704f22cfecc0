"""The `hmm` task under Hydra + Lightning: the documented AER of the default job,
metrics.json, the model folder, evaluate(ckpt_path=), checkpoint resume and
`LitWordAligner.load_from_checkpoint`."""

import json
from pathlib import Path

import pytest
import torch
from conftest import shared_path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict
from safetensors.torch import load_file

import aligners
from aligners.errors import AlignersInputError
from aligners.run import evaluate, train
from aligners.training.hmm import LitWordAligner

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TABLES = ("keys", "t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd", "jump_bwd")
DIAGONAL_AER = 0.538  # `python train.py experiment=diagonal_baseline` (0.5384, no parameters)


def _cfg(tmp, *overrides, name="train", small=True):
    base = ["experiment=hmm_agreement_hansards_20k", "data.train_limit=300", "model.max_jump=4",
            "model.tune_grid.thresholds=[0.3]"] if small else []
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name=name, overrides=[*base, *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp)
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))


def test_default_job_reproduces_the_documented_aer(tmp_path, capsys):
    """`python train.py` (README): 20k Hansards pairs, test AER 0.0837 (deterministic)."""
    shared_path("data", "hansards-enfr-naacl2003", "train")
    run = tmp_path / "run"
    m = train(_cfg(run, small=False))
    assert "AER" in capsys.readouterr().out
    # measured before and after the data-path move: 0.0836679327183939 on both
    assert m["test"]["aer"] == pytest.approx(0.0837, abs=0.001)
    assert m["test"]["precision"] == pytest.approx(0.9274, abs=0.001)
    assert m["test"]["recall"] == pytest.approx(0.9022, abs=0.001)
    assert m["test"]["aer"] < DIAGONAL_AER / 5  # far better than the parameter-free diagonal
    assert m["train"]["pairs"] == 20000 + 447 + 37 and m["train"]["iterations"] == 10
    assert set(m) == {"test", "trial", "train"}
    assert json.loads((run / "metrics.json").read_text()) == m
    # the saved model folder, scored again by evaluate(ckpt_path=...): the same numbers
    assert isinstance(aligners.load(run / "model"),
                      aligners.models.hmm.folder.TrainedWordAligner)
    again = evaluate(_cfg(tmp_path / "eval", f"ckpt_path={run / 'model'}", name="evaluate",
                          small=False))
    assert again["test"] == m["test"]
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["test"] == m["test"]


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory):
    shared_path("data", "hansards-enfr-naacl2003", "train")
    tmp = tmp_path_factory.mktemp("word_task")
    full = train(_cfg(tmp / "full", "model.ibm1_iterations=2", "model.hmm_iterations=1"))
    part = train(_cfg(tmp / "part", "model.ibm1_iterations=2", "model.hmm_iterations=0"))
    ckpt = tmp / "part" / "checkpoints" / "last.ckpt"
    resumed = train(_cfg(tmp / "resumed", "model.ibm1_iterations=2", "model.hmm_iterations=1",
                         f"+ckpt_path={ckpt}"))
    return tmp, full, part, resumed


def test_task_writes_metrics_and_resumes_from_checkpoint(small_runs):
    tmp, full, part, resumed = small_runs
    assert 0.0 < full["test"]["aer"] < 0.6 and full["train"]["iterations"] == 3
    assert set(full["test"]) == {"aer", "precision", "recall", "f1"}
    assert json.loads((tmp / "full" / "metrics.json").read_text()) == full
    # interrupted after Model 1, resumed from the last checkpoint: same tables, same scores
    a = load_file(str(tmp / "full" / "model" / "model.safetensors"))
    b = load_file(str(tmp / "resumed" / "model" / "model.safetensors"))
    for name in TABLES:
        torch.testing.assert_close(a[name], b[name], msg=name)
    assert resumed["test"] == full["test"]


@pytest.mark.parametrize("run", ["part", "full"])
def test_lit_word_aligner_load_from_checkpoint(small_runs, run):
    tmp = small_runs[0]
    lit = LitWordAligner.load_from_checkpoint(tmp / run / "checkpoints" / "last.ckpt")
    saved = load_file(str(tmp / run / "model" / "model.safetensors"))
    for name in TABLES:
        assert torch.equal(getattr(lit.model, name), saved[name]), name
    assert lit.model.stage == ("ibm1" if run == "part" else "hmm")
    assert lit.hparams.config["max_jump"] == 4 and lit.index is None


def test_evaluate_reads_ckpt_path_in_every_form(small_runs):
    tmp, full = small_runs[0], small_runs[1]
    for path in (tmp / "full" / "model", tmp / "full" / "model" / "config.json",
                 tmp / "full", tmp / "full" / "checkpoints" / "last.ckpt"):
        got = evaluate(_cfg(tmp / "eval", f"ckpt_path={path}", name="evaluate"))
        assert got["test"] == full["test"], path
    bad = {"ckpt_path=null": "ckpt_path is required",
           f"ckpt_path={tmp / 'nope'}": "does not exist",
           f"ckpt_path={tmp}": "not a model folder"}
    for override, message in bad.items():
        with pytest.raises(AlignersInputError, match=message):
            evaluate(_cfg(tmp / "eval", override, name="evaluate"))
    with pytest.raises(AlignersInputError, match="model_dir"):
        evaluate(_cfg(tmp / "eval", f"ckpt_path={tmp / 'full'}", f"+model_dir={tmp}",
                      name="evaluate"))


@pytest.mark.parametrize("lowercase", [False, True])
def test_data_lowercase_lowercases_training_gold_and_tuning_text(tmp_path, lowercase):
    """`data.lowercase=true` (the literature's Hansards protocol): every training token and
    the gold / tuning pairs' text lowercased, links unchanged; off, the text is as read."""
    from aligners.data.datasets import load
    from aligners.training.word_task import load_text

    cfg = _cfg(tmp_path, f"+data.lowercase={str(lowercase).lower()}")
    text = load_text(cfg)
    gold, tune = text.gold, text.gold[text.tune]
    tokens = [w for s, t in text.pairs for w in (*s, *t)]
    assert len(tokens) > 1000
    assert (all(w == w.lower() for w in tokens)) == lowercase
    raw = load("hansards-enfr", "test")
    assert [p.alignment for p in gold["test"]] == [p.alignment for p in raw]
    assert ([p.src for p in gold["test"]] == [tuple(w.lower() for w in p.src) for p in raw]
            if lowercase else [p.src for p in gold["test"]] == [p.src for p in raw])
    assert all(w == w.lower() for p in tune for w in (*p.src, *p.tgt)) == lowercase
