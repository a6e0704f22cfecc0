"""LitReorderer: Lightning runs give the plain fits' models, checkpoints load back, and the
export goes through aligners/export.py (`aligners.load` -> a ready Reorderer)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from omegaconf import OmegaConf

import aligners
from aligners.errors import AlignersInputError
from aligners.export import load, write_model
from aligners.features.reorder import csr_to_torch
from aligners.models.reorder import DualMLR, NaiveBayes, PrimalMLR, Reorderer
from aligners.training.lit_reorder import LitReorderer, fit_reorderer


def _toy(n=60, f=8, seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 3, size=(n, f)) * (rng.random((n, f)) < 0.5)
    y = rng.integers(0, 3, size=n)
    return csr_to_torch(sp.csr_matrix(dense.astype(np.float32))), y


def _cfg(tmp_path):
    return OmegaConf.create({
        "trainer": {"_target_": "pytorch_lightning.Trainer", "accelerator": "cpu",
                    "devices": 1, "max_epochs": 10, "default_root_dir": str(tmp_path),
                    "enable_checkpointing": True},
        "logger": {"_target_": "pytorch_lightning.loggers.CSVLogger",
                   "save_dir": str(tmp_path), "name": "logs"},
        "callbacks": {"model_checkpoint": {
            "_target_": "pytorch_lightning.callbacks.ModelCheckpoint",
            "dirpath": str(tmp_path / "checkpoints"), "save_last": True, "save_top_k": 0}},
    })


@pytest.mark.parametrize("kind", ["lexical", "naive_bayes", "primal", "dual"])
def test_lightning_run_equals_plain_fit_and_checkpoint_loads(tmp_path, kind):
    X, y = _toy()
    keys = np.arange(len(y)) % 7
    hp = {"model": kind}
    if kind != "lexical":
        hp["num_features"] = X.shape[1]
    if kind == "dual":
        hp.update(eps=0.0, sigma2=0.5)  # never shrinks: runs all max_epochs iterations
    lit = LitReorderer(seed=5, **hp)
    batch = (keys, y) if kind == "lexical" else (X, y)
    fit_reorderer(lit, batch, cfg=_cfg(tmp_path), name=kind, max_epochs=3)
    gen = torch.Generator().manual_seed(5)
    if kind == "primal":
        ref = PrimalMLR(num_features=X.shape[1]).fit(X, y, epochs=3, lr=0.05, generator=gen)
        torch.testing.assert_close(lit.model.weight, ref.weight, rtol=0, atol=0)
    elif kind == "dual":
        ref = DualMLR(num_features=X.shape[1], sigma2=0.5).fit(X, y, eps=0.0, max_iter=3,
                                                                generator=gen)
        torch.testing.assert_close(lit.model.weight, ref.weight, rtol=0, atol=0)
        assert len(lit.model.history) == 3
    elif kind == "naive_bayes":
        ref = NaiveBayes(num_features=X.shape[1]).fit(X, y)
        torch.testing.assert_close(lit.model.counts, ref.counts)
    # the configured logger and checkpoint callback were used
    assert (tmp_path / "logs" / kind / "metrics.csv").is_file()
    ckpt = tmp_path / "checkpoints" / kind / "last.ckpt"
    assert ckpt.is_file()
    again = LitReorderer.load_from_checkpoint(ckpt)
    assert again.hparams.model == kind
    inputs = keys if kind == "lexical" else X
    torch.testing.assert_close(again.model.predict_log_proba(inputs),
                               lit.model.predict_log_proba(inputs))


def test_dual_stops_when_the_active_set_is_empty(tmp_path):
    X, y = _toy(seed=3)
    lit = LitReorderer(model="dual", num_features=X.shape[1], eps=5.0, sigma2=0.5)
    trainer = fit_reorderer(lit, (X, y), cfg=_cfg(tmp_path), name="d", max_epochs=50)
    assert trainer.current_epoch < 50 and len(lit.model.history) < 50
    assert lit.model.history[-1]["active_fraction"] > 0


def test_primal_validation_tracks_heldout_error_per_epoch(tmp_path):
    X, y = _toy(seed=4)
    lit = LitReorderer(model="primal", num_features=X.shape[1])
    fit_reorderer(lit, (X, y), cfg=_cfg(tmp_path), name="p", max_epochs=2, val_batch=(X, y))
    assert len(lit.val_errors) == 2 and all(0 <= e <= 1 for e in lit.val_errors)


def test_ddp_trainer_is_refused(tmp_path):
    cfg = _cfg(tmp_path)
    cfg.trainer.strategy = "ddp"
    X, y = _toy()
    with pytest.raises(AlignersInputError, match="one process"):
        fit_reorderer(LitReorderer(model="primal", num_features=X.shape[1]), (X, y), cfg=cfg,
                      name="p", max_epochs=1)


def test_aligners_load_returns_a_ready_reorderer(tmp_path):
    X, y = _toy()
    model = NaiveBayes(num_features=X.shape[1]).fit(X, y)
    feats = [["pair", f"s{i}", f"t{i}"] for i in range(X.shape[1])]
    meta = {"extract": {"max_length": 3, "orientation": "wbe", "direction": "backward",
                        "lowercase": True}, "features": {"min_count": 1, "context": False}}
    model.save(tmp_path / "nb", meta=meta, features=feats)
    cfg = json.loads((tmp_path / "nb" / "config.json").read_text())
    assert cfg["format"] == "aligners/1" and cfg["kind"] == "reorder-naive-bayes"
    r = aligners.load(tmp_path / "nb")
    assert isinstance(r, Reorderer) and r.max_length == 3 and r.lowercase
    assert r.featurizer is not None and not r.featurizer.context
    torch.testing.assert_close(r.model.counts, model.counts.float().double())
    # the reorder verb refuses another family's kind by name
    assert isinstance(load(tmp_path / "nb", verb="reorder"), Reorderer)
    write_model(tmp_path / "other", kind="lclr", tensors={"w": torch.zeros(1)}, config={})
    with pytest.raises(AlignersInputError, match="not for `aligners reorder`"):
        load(tmp_path / "other", verb="reorder")
    (tmp_path / "nb" / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(AlignersInputError, match="safetensors"):
        aligners.load(tmp_path / "nb")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_trainer_config_runs_the_cpu_kernels(tmp_path):
    """trainer=gpu applies: the (parameter-free) module sits on the GPU, the batch and the
    numba kernels stay on the CPU, and the result equals the CPU run."""
    X, y = _toy(seed=8)
    cfg = _cfg(tmp_path)
    cfg.trainer.accelerator = "gpu"
    lit = LitReorderer(model="primal", num_features=X.shape[1], seed=2)
    fit_reorderer(lit, (X, y), cfg=cfg, name="gpu", max_epochs=2)
    ref = PrimalMLR(num_features=X.shape[1]).fit(X, y, epochs=2, lr=0.05,
                                                 generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(lit.model.weight, ref.weight, rtol=0, atol=0)
