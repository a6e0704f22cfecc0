"""Each default of the word aligner lives in one place: the dataclasses of
`aligners.models.hmm.config` (and the data path's DEFAULT_CELLS). The CLI reads them; the
Hydra model config is their schema (configs/model/hmm.yaml changes nothing)."""

import argparse
from dataclasses import asdict

from omegaconf import OmegaConf

from aligners.commands.align import add_arguments
from aligners.data import DEFAULT_CELLS, GPU_CELLS, default_cells
from aligners.models.hmm.config import WordAlignConfig, WordDecoding, from_args
from tests.test_configs import _compose


def test_hydra_model_config_equals_the_dataclasses(tmp_path):
    y = OmegaConf.to_container(_compose("train", ["model=hmm"], tmp_path).model)
    assert {k: y[k] for k in asdict(WordAlignConfig())} == asdict(WordAlignConfig())
    assert y["decoding"] == asdict(WordDecoding())
    assert y["batch_cells"] == DEFAULT_CELLS
    known = {*asdict(WordAlignConfig()), "batch_cells", "decoding", "tune_grid"}
    assert set(y) == known  # nothing the task would silently ignore


def test_cli_defaults_are_the_dataclass_defaults():
    p = argparse.ArgumentParser()
    add_arguments(p)
    a = p.parse_args([])
    assert from_args(a) == WordAlignConfig()  # unset options: the dataclass defaults
    assert a.batch_cells is None
    # decoding defaults come from the saved model or the family's DECODING at run time
    assert a.decoding is None and a.threshold is None
    text = " ".join(p.format_help().split())
    assert f"hmm {WordDecoding().method}" in text and f"hmm {WordDecoding().threshold}" in text


def test_batch_budget_follows_the_device():
    """The CLI's --batch-cells (None) resolves per device: 1M cells on the CPU, 16M on a GPU
    (each batch costs a fixed number of kernel launches there)."""
    assert default_cells("cpu") == DEFAULT_CELLS == 1_000_000
    assert default_cells("cuda") == default_cells("cuda:1") == GPU_CELLS == 16 * DEFAULT_CELLS
