"""End to end: `train.py experiment=...` on a few MSR06 pairs, then `evaluate.py` with the
saved model folder and `data.test_path` (a jacana JSON file); the trainer, logger and
callbacks of the config are used; metrics.json has the one schema."""

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
def test_train_then_evaluate_any_json(experiment, tmp_path, capsys):
    shared_path("data", "msr-rte2006-aligned")
    small = ["data.train_limit=12", "data.test_limit=10", "training.max_iter=4",
             "training.directions=[s2t,t2s]"]
    metrics = train(_cfg("train", [f"experiment={experiment}", *small], tmp_path))
    out = capsys.readouterr()
    assert set(metrics) == {"train", "test/s2t", "test/t2s", "test/union"}
    for split in ("test/s2t", "test/t2s", "test/union"):
        res = metrics[split]
        assert res["pairs"] == 10 and 0.0 <= res["micro/f1"] <= 1.0
        for c in ("identical", "non-identical", "token", "phrase"):
            assert f"breakdown/{c}/macro/f1" in res
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics
    # one model folder holding both directions; no weight dump on stdout, a file instead
    cfg = json.loads((tmp_path / "model" / "config.json").read_text())
    assert cfg["kind"].startswith("mono-") and cfg["directions"] == ["s2t", "t2s"]
    assert set(json.loads((tmp_path / "weights.json").read_text())) == {"s2t", "t2s"}
    assert "weights:" not in out.out and "'identical':" not in out.out
    # cfg.logger and cfg.callbacks were used: CSV logs and the last checkpoint per direction
    assert list((tmp_path / "logs").rglob("metrics.csv"))
    assert (tmp_path / "checkpoints" / "s2t" / "last.ckpt").exists()
    assert (tmp_path / "checkpoints" / "t2s" / "last.ckpt").exists()
    for noise in ("litmodels", "Tip:", "configure_optimizers", "UserWarning",
                  "does not have many workers"):
        assert noise not in out.out + out.err, noise
    gold = shared_path("data", "msr-rte2006-aligned", "converted", "RTE2_test_M.align.json")
    again = evaluate(_cfg("evaluate", [f"experiment={experiment}", "data.test_limit=10",
                                       f"ckpt_path={tmp_path / 'model'}",
                                       f"data.test_path={gold}"], tmp_path / "eval"))
    for split in ("test/s2t", "test/t2s", "test/union"):
        assert again[split] == metrics[split]  # same model, same pairs
    # ckpt_path may also name the run folder or a file of the model folder
    for ckpt in (tmp_path, tmp_path / "model" / "config.json"):
        same = evaluate(_cfg("evaluate", [f"experiment={experiment}", "data.test_limit=10",
                                          f"ckpt_path={ckpt}"], tmp_path / "eval2"))
        assert same["test/s2t"] == metrics["test/s2t"]


def test_evaluate_bad_ckpt_path_is_one_clear_error(tmp_path):
    from aligners.errors import AlignersInputError
    with pytest.raises(AlignersInputError, match="ckpt_path"):
        evaluate(_cfg("evaluate", ["experiment=tokencrf_msr06"], tmp_path / "a"))
    with pytest.raises(AlignersInputError, match="ckpt_path does not exist"):
        evaluate(_cfg("evaluate", ["experiment=tokencrf_msr06",
                                   f"ckpt_path={tmp_path / 'nope'}"], tmp_path / "b"))


@pytest.mark.parametrize("override,needle", [("training.batch_size=0", "batch_size"),
                                             ("training.directions=[x2y]", "directions"),
                                             ("data.train_limit=-3", "train_limit"),
                                             ("training.l2=-1", "l2")])
def test_bad_training_settings_rejected_before_training(tmp_path, override, needle):
    from aligners.errors import AlignersInputError
    with pytest.raises(AlignersInputError, match=needle):
        train(_cfg("train", ["experiment=tokencrf_msr06", override], tmp_path))
    assert not (tmp_path / "model").exists()


@pytest.mark.parametrize("kind,optimizer", [("phrase", "lbfgs"), ("token", "adam")])
def test_lightning_checkpoint_round_trip(tmp_path, kind, optimizer):
    """House rule 9: fit one step, save a Lightning checkpoint, `load_from_checkpoint`
    restores the hparams and the trained weights exactly (and the same decoding)."""
    import pytorch_lightning as pl
    import torch

    from aligners.data.types import AlignedPair, Alignment
    from aligners.models.mono.aligner import chunks, featurise
    from aligners.models.mono.config import MonoConfig, MonoTraining
    from aligners.training.mono import LitMonoAligner

    pairs = [AlignedPair(("he", "passed", "away"), ("he", "died"),
                         Alignment(frozenset({(0, 0), (1, 1), (2, 1)}),
                                   frozenset({(0, 0), (1, 1), (2, 1)}))),
             AlignedPair(("the", "cat", "sat"), ("a", "cat", "sat"),
                         Alignment(frozenset({(1, 1), (2, 2)}), frozenset({(1, 1), (2, 2)})))]
    torch.manual_seed(0)
    lit = LitMonoAligner(MonoConfig(kind=kind, max_src_len=2, max_tgt_len=2),
                         MonoTraining(optimizer=optimizer, lr=0.1, l2=0.1, max_iter=3),
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
    from aligners.models.mono.aligner import predict
    assert predict(again.model, examples) == predict(lit.model, examples)


def test_one_thread_restores_the_callers_setting():
    import torch

    from aligners.models.mono.aligner import one_thread
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), one_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("trainer", [
    "cpu", pytest.param("gpu", marks=pytest.mark.skipif(
        not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU"))])
def test_trainer_config_decides_the_device(tmp_path, trainer):
    """`trainer=gpu` puts the module AND every batch tensor on the GPU (device-aware
    MonoBatch.to); `trainer=cpu` keeps them on the CPU. The batch examples' features follow."""
    import pytorch_lightning as pl
    import torch

    from aligners.data.types import AlignedPair, Alignment
    from aligners.models.mono.aligner import chunks, featurise
    from aligners.models.mono.config import MonoConfig, MonoTraining
    from aligners.training.mono import LitMonoAligner
    from aligners.training.trainer import build_trainer

    seen = []

    class Record(pl.Callback):
        def on_train_batch_start(self, tr, module, batch, batch_idx):
            b = batch[0]
            seen.append((module.device.type, b.valid.device.type, b.trans_idx.device.type,
                         b.examples[0].emit.device.type))

    cfg = _cfg("train", ["experiment=tokencrf_msr06", f"trainer={trainer}",
                         "training.max_iter=2"], tmp_path)
    pairs = [AlignedPair(("the", "cat", "sat"), ("a", "cat", "sat"),
                         Alignment(frozenset({(1, 1), (2, 2)}), frozenset({(1, 1), (2, 2)})))]
    lit = LitMonoAligner(MonoConfig(kind="token", max_src_len=1, max_tgt_len=1),
                         MonoTraining(max_iter=2), n_pairs=1)
    batches, _ = chunks(featurise(pairs, lit.model), max_tgt_len=1, batch_size=8)
    loader = torch.utils.data.DataLoader([batches], batch_size=None, collate_fn=lambda x: x)
    tr = build_trainer(cfg, max_epochs=1, limit_val_batches=0, log_every_n_steps=1)
    tr.callbacks.append(Record())
    tr.fit(lit, loader)
    want = "cuda" if trainer == "gpu" else "cpu"
    assert seen == [(want, want, want, want)]
