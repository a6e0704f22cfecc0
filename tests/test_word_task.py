"""The `word_align` task under Hydra + Lightning: AER table, export, checkpoint resume."""

from pathlib import Path

import torch
from conftest import shared_path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict
from safetensors.torch import load_file

from aligners.run import train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _cfg(tmp, *overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[
            "experiment=hmm_agreement_hansards_20k", "data.train_limit=300",
            "model.max_jump=4",
            "model.tune_grid.thresholds=[0.3]", *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp)
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))


def test_task_prints_aer_exports_and_resumes_from_checkpoint(tmp_path, capsys):
    shared_path("data", "hansards-enfr-naacl2003", "train")
    full = train(_cfg(tmp_path / "full", "model.ibm1_iterations=2", "model.hmm_iterations=1"))
    out = capsys.readouterr().out
    assert "AER" in out and "test" in out
    assert 0.0 < full["test/aer"] < 0.6
    assert len(full["loglik"]) == 3
    # interrupted after Model 1, resumed from the last checkpoint: same tables
    train(_cfg(tmp_path / "part", "model.ibm1_iterations=2", "model.hmm_iterations=0"))
    ckpt = tmp_path / "part" / "checkpoints" / "last.ckpt"
    assert ckpt.is_file()
    resumed = train(_cfg(tmp_path / "resumed", "model.ibm1_iterations=2",
                         "model.hmm_iterations=1", f"+ckpt_path={ckpt}"))
    a = load_file(str(tmp_path / "full" / "model" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "model" / "model.safetensors"))
    for name in a:
        torch.testing.assert_close(a[name], b[name], msg=name)
    assert resumed["test/aer"] == full["test/aer"]
