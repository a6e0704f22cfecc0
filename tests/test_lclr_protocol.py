"""The sentence-pair LCLR protocol: repeated k-fold splits, the mean ± sd summary and table,
and one-line errors for an empty C grid."""

import numpy as np
import pytest
from omegaconf import OmegaConf

from aligners.errors import AlignersInputError
from aligners.models.lclr.config import lclr_settings
from aligners.training._lclr_pairs import cv_splits, summary, table


def test_cv_splits_partition_each_repeat_and_reshuffle():
    splits = cv_splits(10, 3, 5, seed=7)
    assert len(splits) == 15
    for r in range(5):
        held = np.concatenate([te for _, te in splits[3 * r: 3 * r + 3]])
        assert sorted(held.tolist()) == list(range(10))  # each repeat: a partition
        for tr, te in splits[3 * r: 3 * r + 3]:
            assert not set(tr) & set(te) and len(tr) + len(te) == 10
            assert len(te) in (3, 4)  # balanced folds
    firsts = {tuple(splits[3 * r][1]) for r in range(5)}
    assert len(firsts) > 1  # the repeats are different shuffles
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(splits, cv_splits(10, 3, 5, 7)))
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(splits, cv_splits(10, 3, 5, 8)))


def test_summary_mean_sd_and_table():
    rows = [{"seed": 0, "two_stage_C": 0.1, "lclr_C": 0.3, "two_stage_acc": 0.70,
             "lclr_acc": 0.74},
            {"seed": 1, "two_stage_C": 0.1, "lclr_C": 1.0, "two_stage_acc": 0.72,
             "lclr_acc": 0.76}]
    s = summary(rows)
    assert s["lclr_acc"] == pytest.approx(0.75) and s["two_stage_acc"] == pytest.approx(0.71)
    assert s["lclr_acc_sd"] == pytest.approx(np.std([0.74, 0.76], ddof=1))
    assert s["lclr_acc_seed1"] == 0.76 and s["two_stage_acc_seed0"] == 0.70
    text = table(rows)
    assert "75.00 ± 1.41" in text and "71.00 ± 1.41" in text and "(2 seeds)" in text
    assert summary(rows[:1])["lclr_acc_sd"] == 0.0


def test_empty_c_grid_fails_fast():
    cfg = OmegaConf.create({"model": {"task": "paraphrase", "C_grid": []}, "data": {}})
    with pytest.raises(AlignersInputError, match="C_grid must be a non-empty list"):
        lclr_settings(cfg)
    cfg.model.C_grid = [0.1]
    cfg.model.drop_features = ["bogus"]
    with pytest.raises(AlignersInputError, match="drop_features"):
        lclr_settings(cfg)


def test_result_rows_carry_mean_sd_seeds_and_versions():
    """benchmarks/lclr.py: a sentence-pair run's rows hold the mean, the sd, each seed's
    figure and C, the package versions and the per-pair ILP cost."""
    from benchmarks.lclr import rows_from_metrics
    metrics = {
        "test": {"two_stage_acc": 0.71, "two_stage_acc_sd": 0.01, "lclr_acc": 0.75,
                 "lclr_acc_sd": 0.02, "two_stage_acc_seed3": 0.70, "two_stage_acc_seed4": 0.72,
                 "lclr_acc_seed3": 0.74, "lclr_acc_seed4": 0.76},
        "train": {"two_stage_C_seed3": 0.1, "two_stage_C_seed4": 0.3, "lclr_C_seed3": 0.1,
                  "lclr_C_seed4": 0.3, "lclr_seconds": 12.0, "lclr_cpu_seconds": 10.0,
                  "lclr_outer_iterations": 5.0, "cv_folds": 3, "cv_repeats": 5, "lclr_cv": 0},
        "inference": {"ms_median": 1.5, "cpu_ms_median": 1.2, "pairs_per_s_wall": 400.0,
                      "variables_mean": 40.0, "constraints_mean": 50.0}}
    run = {"wall_s": 100.0, "cpu_s": 90.0, "peak_rss_mib": 512.0}
    two, joint = rows_from_metrics(metrics, "lclr_entailment", run, "test box")
    assert two["system"] == "two-stage" and joint["system"] == "LCLR"
    assert joint["metrics"] == {"accuracy": 75.0, "accuracy_sd": 2.0}
    assert joint["wall_s"] == 12.0 and joint["peak_rss_mib"] == 512.0 and two["wall_s"] is None
    assert joint["note"].startswith("75.00 ± 2.00 (mean ± sd over 2 seeds")
    assert "seed 4: 76.00 (C 0.3)" in joint["note"] and "seed 3: 70.00 (C 0.1)" in two["note"]
    assert "3-fold CV x 5 shuffles" in joint["note"] and "highspy" in joint["note"]
    assert "median 1.5 ms wall" in joint["note"] and "ms wall" not in two["note"]
