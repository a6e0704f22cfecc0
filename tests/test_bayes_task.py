"""`python train.py experiment=efmaral_*`: the task samples the set's own text, writes
metrics.json, alignments and a reusable model; evaluate.py scores the saved model."""

import json
from pathlib import Path

import pytest
from conftest import shared_path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from aligners.run import evaluate, train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _cfg(tmp, experiment, *overrides, root="train"):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name=root, overrides=[f"experiment={experiment}", *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp)
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))


def test_task_trains_scores_and_saves(tmp_path, capsys):
    shared_path("data", "rwth-deen-europarl", "deen.talp")
    metrics = train(_cfg(tmp_path, "efmaral_rwth_deen", "model.iterations=[2,2,12]",
                         "model.n_samplers=1"))
    out = capsys.readouterr().out
    assert "rwth-deen-europarl" in out and "AER" in out
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["test"]["aer"] == pytest.approx(metrics["test"]["aer"])
    assert 0.0 < saved["test"]["aer"] < 0.5  # diagonal: ~0.6 on this set
    assert len((tmp_path / "alignments.test.txt").read_text().splitlines()) == 508
    assert json.loads((tmp_path / "model" / "config.json").read_text())["kind"] == "bayesian"
    again = evaluate(_cfg(tmp_path / "eval", "efmaral_rwth_deen", "model.n_samplers=1",
                          f"ckpt_path={tmp_path / 'model'}", root="evaluate"))
    assert 0.0 < again["test"]["aer"] < 0.5


def test_task_refuses_a_gpu_trainer(tmp_path):
    with pytest.raises(ValueError, match="CPU"):
        train(_cfg(tmp_path, "efmaral_wpt_roen", "trainer=gpu"))
