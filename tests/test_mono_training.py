"""End to end: `train.py experiment=...` on a few MSR06 pairs, then `evaluate.py` with the
saved safetensors model and `data.test_path` (a jacana JSON file)."""

import json

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf, open_dict

from aligners.run import evaluate, train
from tests.conftest import shared_path
from tests.test_configs import CONFIGS


def _cfg(root, overrides, out):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name=root, overrides=overrides, return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(out)
        cfg.hydra.job.num = 0
    HydraConfig.instance().set_config(cfg)
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra")
    return OmegaConf.create(plain)


@pytest.mark.parametrize("experiment", ["tokencrf_msr06", "yao2013_msr06_phrase"])
def test_train_then_evaluate_any_json(experiment, tmp_path):
    shared_path("data", "msr-rte2006-aligned")
    small = ["data.train_limit=12", "data.test_limit=10", "training.max_iter=4",
             "training.directions=[s2t,t2s]"]
    metrics = train(_cfg("train", [f"experiment={experiment}", *small], tmp_path))
    assert set(metrics["results"]) == {"s2t", "t2s", "union"}
    for res in metrics["results"].values():
        assert res["pairs"] == 10 and 0.0 <= res["micro"]["f1"] <= 1.0
        assert {"identical", "non-identical", "token", "phrase"} <= set(res["breakdown"])
    assert (tmp_path / "model.s2t.safetensors").exists()
    assert json.loads((tmp_path / "metrics.json").read_text())["model"] in ("token", "phrase")
    gold = shared_path("data", "msr-rte2006-aligned", "converted", "RTE2_test_M.align.json")
    out = tmp_path / "eval"
    again = evaluate(_cfg("evaluate", [f"experiment={experiment}", "data.test_limit=10",
                                       f"ckpt_path={tmp_path / 'model.s2t.safetensors'}",
                                       f"data.test_path={gold}"], out))
    assert again["results"]["s2t"] == metrics["results"]["s2t"]  # same model, same pairs


@pytest.mark.parametrize("kind,optimizer", [("phrase", "lbfgs"), ("token", "adam")])
def test_lightning_checkpoint_round_trip(tmp_path, kind, optimizer):
    """House rule 9: fit one step, save a Lightning checkpoint, `load_from_checkpoint`
    restores the hparams and the trained weights exactly (and the same decoding)."""
    import pytorch_lightning as pl
    import torch

    from aligners.data.types import AlignedPair, Alignment
    from aligners.training.monolingual import LitMonoAligner, chunks, featurise

    pairs = [AlignedPair(("he", "passed", "away"), ("he", "died"),
                         Alignment(frozenset({(0, 0), (1, 1), (2, 1)}),
                                   frozenset({(0, 0), (1, 1), (2, 1)}))),
             AlignedPair(("the", "cat", "sat"), ("a", "cat", "sat"),
                         Alignment(frozenset({(1, 1), (2, 2)}), frozenset({(1, 1), (2, 2)})))]
    torch.manual_seed(0)
    lit = LitMonoAligner(kind=kind, max_src_len=2, max_tgt_len=2, embedding=False,
                         optimizer=optimizer, lr=0.1, l2=0.1, cost_weight=1.0, max_iter=3,
                         n_pairs=len(pairs))
    examples = featurise(pairs, lit.model)
    batches, _ = chunks(examples, max_tgt_len=lit.model.max_tgt_len, batch_size=8)
    loader = torch.utils.data.DataLoader([batches], batch_size=None, collate_fn=lambda x: x)
    trainer = pl.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(lit, loader)
    assert float(lit.model.w_emit.detach().abs().sum()) > 0  # trained, not the zero init
    ckpt = tmp_path / "mono.ckpt"
    trainer.save_checkpoint(ckpt)
    again = LitMonoAligner.load_from_checkpoint(ckpt, weights_only=True)
    assert dict(again.hparams) == dict(lit.hparams)
    assert type(again.model) is type(lit.model)
    for (na, a), (nb, b) in zip(lit.model.state_dict().items(),
                                 again.model.state_dict().items()):
        assert na == nb and torch.equal(a, b)
    from aligners.training.monolingual import predict
    assert predict(again.model, examples) == predict(lit.model, examples)


def test_one_thread_restores_the_callers_setting():
    import torch

    from aligners.training.monolingual import one_thread
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), one_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
