"""The diagonal baseline (`task: baseline`, `python train.py experiment=diagonal_baseline`)."""

import json

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from aligners.run import train
from aligners.training.baseline import diagonal_alignment
from tests.conftest import shared_path
from tests.test_configs import CONFIGS


def test_diagonal_alignment_hand_worked():
    assert diagonal_alignment(src_len=3, tgt_len=3) == {(0, 0), (1, 1), (2, 2)}
    # J = 4, I = 2: floor((2j + 1) * 2 / 8) = 0, 0, 1, 1
    assert diagonal_alignment(src_len=2, tgt_len=4) == {(0, 0), (0, 1), (1, 2), (1, 3)}
    # J = 2, I = 5: floor((2j + 1) * 5 / 4) = 1, 3
    assert diagonal_alignment(src_len=5, tgt_len=2) == {(1, 0), (3, 1)}
    assert diagonal_alignment(src_len=0, tgt_len=4) == set()


def test_diagonal_baseline_job_scores_the_hansards_test_set(tmp_path, capsys):
    shared_path("data", "hansards-enfr-naacl2003", "test")
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["experiment=diagonal_baseline"])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path)
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    metrics = train(cfg)
    out = capsys.readouterr().out
    assert "diagonal baseline on hansards-enfr test (447 pairs)" in out and "AER" in out
    assert metrics["pairs"] == 447 and metrics["counts"]["sure"] == 4038
    saved = json.loads((tmp_path / "metrics.json").read_text())["test"]  # split -> metric
    assert saved["micro.aer"] == metrics["micro"]["aer"] and saved["pairs"] == 447
    assert saved["counts.sure"] == 4038
    lines = (tmp_path / "alignments.txt").read_text().splitlines()
    assert len(lines) == 447
    # one link per French (target) word
    assert metrics["counts"]["predicted"] == sum(len(x.split()) for x in lines)
    assert 0.0 < metrics["micro"]["aer"] < 1.0
    assert metrics["micro"]["aer"] == pytest.approx(
        1 - (metrics["counts"]["hit_sure"] + metrics["counts"]["hit_possible"])
        / (metrics["counts"]["predicted"] + metrics["counts"]["sure"])
    )
