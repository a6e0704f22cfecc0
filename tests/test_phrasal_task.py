"""Task `gappy-hsmm` helpers: gappy-pattern counting and decoding choice on dev."""

from pathlib import Path

import numpy as np
import pytest

from aligners.data.types import AlignedPair, Alignment
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.training.gappy_hsmm import gappy_patterns

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _pair(src, tgt, sure, possible=()):
    return AlignedPair(tuple(src.split()), tuple(tgt.split()),
                       Alignment(frozenset(sure), frozenset(possible)))


def test_gappy_patterns_count_and_fully_right():
    gold = [_pair("i do not know", "je ne sais pas", {(0, 0), (2, 1), (2, 3), (3, 2)}, {(1, 2)}),
            _pair("he is not", "il n' est pas", {(0, 0), (1, 2), (2, 1), (2, 3)}),
            _pair("a b", "x y", {(0, 0), (1, 1)})]
    right = [[(0, 0), (2, 1), (2, 3), (3, 2), (1, 2)], [(0, 0), (1, 2), (2, 1)], [(0, 0)]]
    n, ok, n_np, ok_np = gappy_patterns(gold, right)
    assert (n, ok) == (2, 1)  # pair 2 misses not-pas
    assert (n_np, ok_np) == (1, 1)  # only pair 1 has `ne`; pair 2 has n'
    extra = [[(0, 0), (2, 1), (2, 3), (3, 2), (2, 0)], *right[1:]]  # a link outside possible
    assert gappy_patterns(gold, extra)[:2] == (2, 0)


def test_choose_picks_the_lowest_dev_aer():
    """The one chooser over the phrasal model's lines (`PhrasalAligned`, its link matrices
    given as kept)."""
    from types import SimpleNamespace

    from aligners.inference.choose import choose_decoding
    from aligners.models.gappy_hsmm.config import METHODS
    from aligners.models.gappy_hsmm.folder import PhrasalAligned

    gold = [_pair("a b", "x y", {(0, 0), (1, 1)})]
    lf = np.array([[0.9, 0.2], [0.1, 0.45]], dtype=np.float32)
    lb = np.array([[0.8, 0.1], [0.2, 0.7]], dtype=np.float32)
    kept = {False: [[(0, lf, lb)]], True: [[(0, lf > 0.5, lb > 0.5)]]}
    aligned = PhrasalAligned(None, SimpleNamespace(n_sentences=1), None, keep=kept)
    grid = {"methods": ["agreement", "posterior"], "thresholds": [0.1, 0.5],
            "heuristics": ["intersect"]}
    dec, aer = choose_decoding(aligned, gold, grid, METHODS)
    assert aer == 0.0 and dec == {"method": "agreement", "threshold": 0.1, "symmetrize": "none"}


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="p0"):
        PhrasalConfig(p0=1.5)
    with pytest.raises(ValueError, match="max_phrase_len"):
        PhrasalConfig(max_phrase_len=40)


def test_the_task_runs_end_to_end_and_its_saved_model_evaluates(tmp_path):
    """`train.py experiment=bansal2011_hansards_20k` on a 300-pair slice, 1 iteration per
    stage: four rows in metrics.json with AERs in [0, 1], a model folder that `evaluate`
    scores on the 447 test pairs. (The task once crashed on a renamed trainer API.)"""
    import json
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf, open_dict

    from aligners.data.paths import data_root
    from aligners.training.gappy_hsmm import evaluate, train

    if not (data_root() / "hansards-enfr-naacl2003").is_dir():
        pytest.skip("shipped Hansards data not found")
    configs = Path(__file__).resolve().parents[1] / "configs"
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[
            "experiment=bansal2011_hansards_20k", "data.train_limit=300",
            "model.word.ibm1_iterations=1", "model.word.hmm_iterations=1",
            "model.start.ibm1_iterations=1", "model.start.hmm_iterations=2",
            "model.phrasal.iterations=1", "model.phrasal.n_contiguous=50",
            "model.phrasal.n_gappy=10", "model.tune_grid.thresholds=[0.5]",
            "model.tune_grid.heuristics=[intersect]"])
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(cfg):
        cfg.paths = {"data_root": None, "output_dir": str(tmp_path / "run")}
    metrics = train(cfg)
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    for row in ("word_hmm_agreement", "+contiguous", "+gappy"):
        assert 0.0 <= saved[row]["aer"] <= 1.0 and saved[row]["aer"] == metrics[row]["aer"]
    assert saved["run"]["training_pairs"] == 300 + 447 + 37
    run = saved["run"]  # the phrasal start ran model.start's counts, not model.word's
    assert (run["start_ibm1_iterations"], run["start_hmm_iterations"]) == (1, 2), run
    with open_dict(cfg):
        cfg.ckpt_path = str(tmp_path / "run")
        cfg.paths.output_dir = str(tmp_path / "eval")
    got = evaluate(cfg)
    assert (tmp_path / "eval" / "metrics.json").is_file()
    scored = json.dumps(got)
    assert "aer" in scored, scored


def test_every_phrasal_config_key_reaches_the_model():
    """The task keeps only PhrasalConfig fields of `model.phrasal`: a key in the yaml that is
    not a field (a typo, an option the model lost) would be dropped silently."""

    from hydra import compose, initialize_config_dir

    from aligners.training.gappy_hsmm import task_config

    configs = CONFIGS
    for exp in ("bansal2011_hansards", "bansal2011_hansards_20k"):
        with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
            cfg = compose(config_name="train", overrides=[
                f"experiment={exp}", "model.phrasal.min_count=7",
                "model.phrasal.gappy_rank=count"])
        assert set(cfg.model.phrasal) <= set(PhrasalConfig.__dataclass_fields__), exp
        pc = task_config(cfg.model, 20_000).phrasal
        assert (pc.min_count, pc.gappy_rank) == (7, "count")


def test_the_phrasal_start_takes_model_start_iteration_counts():
    """`model.start` overrides only the iteration counts of `model.word` for the
    no-agreement start."""
    from omegaconf import OmegaConf

    from aligners.training.gappy_hsmm import task_config

    def start_config(m, n_pairs):
        return task_config(m, n_pairs).start

    m = OmegaConf.create({"word": {"ibm1_iterations": 5, "hmm_iterations": 5, "p0": 0.2,
                                   "max_jump": 7},
                          "start": {"ibm1_iterations": 3, "hmm_iterations": 2}})
    c = start_config(m, 1000)
    assert (c.ibm1_iterations, c.hmm_iterations, c.p0, c.max_jump, c.agreement) == (
        3, 2, 0.2, 7, False)
    del m["start"]
    c = start_config(m, 1000)
    assert (c.ibm1_iterations, c.hmm_iterations, c.agreement) == (5, 5, False)


def test_unknown_start_and_phrasal_keys_are_refused_before_the_task_runs():
    """`run.check` (`config_checks.check_config`) refuses a misspelt key of `model.start` or
    `model.phrasal`: the task never sees one."""
    from hydra import compose, initialize_config_dir

    from aligners.config_checks import check_config
    from aligners.errors import AlignersInputError

    for key in ("model.start.hmm_iteration", "model.phrasal.min_cuont"):
        with initialize_config_dir(str(CONFIGS), version_base=None):
            cfg = compose("train", overrides=["experiment=bansal2011_hansards", f"+{key}=2"])
        with pytest.raises(AlignersInputError, match=f"^{key} is not a setting"):
            check_config(cfg, cfg.task)


@pytest.mark.parametrize("n_pairs", [1_000, 20_484, 200_484])
def test_null_sized_settings_follow_the_one_regimen_table_of_the_cli(n_pairs):
    """configs/model/gappy_hsmm.yaml leaves the sized settings null: the task fills them
    from the regimen of the corpus size, exactly as `aligners align --model gappy-hsmm`
    (GappyHSMMConfig.for_pairs) does; a value given keeps its place."""
    from hydra import compose, initialize_config_dir

    from aligners.models.gappy_hsmm.config import GappyHSMMConfig
    from aligners.training.gappy_hsmm import task_config

    with initialize_config_dir(str(CONFIGS), version_base=None):
        m = compose("train", overrides=["experiment=bansal2011_hansards"]).model
    cli = GappyHSMMConfig().for_pairs(n_pairs)
    task = task_config(m, n_pairs)
    assert (task.start.ibm1_iterations, task.start.hmm_iterations) == (
        cli.start.ibm1_iterations, cli.start.hmm_iterations)
    for key in ("p0", "iterations", "min_count", "gappy_min_count"):
        assert getattr(task.phrasal, key) == getattr(cli.phrasal, key), key
    m.phrasal.p0 = 0.35
    assert task_config(m, n_pairs).phrasal.p0 == 0.35
