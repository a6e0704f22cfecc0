"""Task `hmm`: the word HMM family's Hydra task (`word_task.WordTask`) with EM under
Lightning: `python train.py experiment=hmm_agreement_hansards_20k`.

One EM iteration = one epoch (manual optimisation): `training_step` runs the model's E-step
of one length-bucketed batch (`WordAligner.accumulate`) and the epoch's end its M-step
(`WordAligner.m_step`, which all-reduces the counts across processes first): the steps
that `WordAligner.fit` runs on one process. Each rank takes every world_size-th batch, so
2 processes give the same tables as 1 (DDP). Rank 0 then decodes, scores and saves as
every word task does (`<run>/metrics.json`, `alignments.<split>.txt`, `<run>/model`;
`python evaluate.py ... ckpt_path=<run>/model` scores it again). `cfg.ckpt_path` (a
Lightning checkpoint) resumes an interrupted training.
"""

from __future__ import annotations

import time
from dataclasses import asdict

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig
from torch import nn
from torch.utils.data import DataLoader, Sampler

from aligners.data.bitext import PairIndex, build_index
from aligners.data.vocab import WordIds
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner
from aligners.models.hmm.folder import TrainedWordAligner
from aligners.training.trainer import build_trainer
from aligners.training.word_task import Fitted, Text, WordTask

__all__ = ["ShardSampler", "LitEM", "LitWordAligner", "HMMTask", "train", "evaluate"]


class ShardSampler(Sampler[int]):
    """Batch numbers rank, rank + world, ..., then -1 (a no-op step) so that every rank runs
    the same number of steps; no batch is repeated, so the counts stay exact."""

    def __init__(self, n_batches: int, *, rank: int = 0, world_size: int = 1):
        self.n, self.rank, self.world = n_batches, rank, world_size

    def __iter__(self):
        mine = list(range(self.rank, self.n, self.world))
        return iter(mine + [-1] * (len(self) - len(mine)))

    def __len__(self) -> int:
        return -(-self.n // self.world)


class LitEM(pl.LightningModule):
    """The Lightning driver of a model's own EM steps (orchestration only): per epoch
    `model.reset_counts()`, per batch number k `e_step(k)` (the model's E-step), at the
    epoch's end `model.m_step()` (its M-step; log-likelihoods (2,) kept in `history`)."""

    def __init__(self, model, index: PairIndex | None):
        super().__init__()
        self.automatic_optimization = False
        self.model, self.index = model, index
        self.history: list[list[float]] = []
        # DDP refuses modules without trainable parameters; EM never uses gradients.
        self._ddp_anchor = nn.Parameter(torch.zeros(1))

    def train_dataloader(self) -> DataLoader:
        if self.index is None:
            raise ValueError(f"{type(self).__name__} needs `index=` (the training PairIndex) "
                             "to train")
        rank = self.global_rank if self.trainer is not None else 0
        world = self.trainer.world_size if self.trainer is not None else 1
        sampler = ShardSampler(len(self.index), rank=rank, world_size=world)
        numbers = {k: k for k in range(-1, len(self.index))}  # item k: batch number k
        return DataLoader(numbers, batch_size=None, sampler=sampler)

    def configure_optimizers(self):
        return None

    def on_train_epoch_start(self) -> None:
        self.model.reset_counts()

    def training_step(self, k, batch_idx):
        if int(k) >= 0:  # -1: the padding step of a rank with fewer batches
            self.e_step(int(k))

    def e_step(self, k: int) -> None:
        self.model.accumulate(self.index.batch(k))

    def on_train_epoch_end(self) -> None:
        ll = self.model.m_step()
        self.history.append(ll.tolist())
        self.log_dict({"loglik_fwd": float(ll[0]), "loglik_bwd": float(ll[1])},
                      on_epoch=True, rank_zero_only=True)


class LitWordAligner(LitEM):
    """LitEM of a WordAligner. Hyper-parameters are plain values (vocabulary sizes,
    pair-table size, the WordAlignConfig as a dict), so `load_from_checkpoint(path)`
    rebuilds the module and fills its tables from the checkpoint. `model` (an existing
    WordAligner) and `index` (the training PairIndex, needed only to train) are not."""

    def __init__(self, n_src_words: int, n_tgt_words: int, n_pairs: int,
                 config: dict | None = None, *, model: WordAligner | None = None,
                 index: PairIndex | None = None):
        if model is None:
            model = WordAligner(keys=torch.zeros(n_pairs, dtype=torch.long),
                                n_src_words=n_src_words, n_tgt_words=n_tgt_words,
                                config=WordAlignConfig(**(config or {})))
        elif (model.n_src_words, model.n_tgt_words, model.keys.numel()) != (
                n_src_words, n_tgt_words, n_pairs):
            raise ValueError("model does not match n_src_words / n_tgt_words / n_pairs")
        super().__init__(model, index)
        self.save_hyperparameters({"n_src_words": n_src_words, "n_tgt_words": n_tgt_words,
                                   "n_pairs": n_pairs, "config": asdict(model.config)})

    @classmethod
    def from_model(cls, model: WordAligner, index: PairIndex | None = None) -> LitWordAligner:
        """Wrap an existing model (its tables are used, not copied)."""
        return cls(model.n_src_words, model.n_tgt_words, model.keys.numel(),
                   asdict(model.config), model=model, index=index)

    def on_train_start(self) -> None:
        if self.index is not None:  # batches move to the model's device once, not per step
            self.index.to(self.model.keys.device)


def fit_em(cfg: DictConfig, lit: LitEM, epochs: int, **fit) -> pl.Trainer:
    """`lit` trained for `epochs` EM iterations by the task's Trainer (`build_trainer`)."""
    trainer = build_trainer(cfg, max_epochs=epochs, use_distributed_sampler=False,
                            limit_val_batches=0)
    trainer.fit(lit, **fit)
    return trainer


class HMMTask(WordTask):
    """The hmm family's hooks: EM under Lightning; each split decoded by the model (its
    `decode`), a chosen Viterbi decoding saved with threshold 0."""

    name = "hmm"
    viterbi_threshold = 0.0

    def fit(self, cfg: DictConfig, text: Text, run) -> Fitted | None:
        pl.seed_everything(int(cfg.seed), verbose=False)
        t0 = time.time()
        src_ids, tgt_ids = WordIds(), WordIds()
        index = build_index(text.pairs, src_ids, tgt_ids, cells=int(cfg.model.batch_cells))
        model = WordAligner.from_index(index, self.config(cfg))
        lit = LitWordAligner.from_model(model, index)
        trainer = fit_em(cfg, lit, model.n_iterations, ckpt_path=cfg.get("ckpt_path"))
        if not trainer.is_global_zero:
            return None
        seconds = time.time() - t0
        ll = lit.history[-1] if lit.history else [0.0, 0.0]
        print(f"word alignment: {cfg.data.name}, {index.n_sentences} training pairs, "
              f"{model.n_iterations} EM iterations, {seconds:.1f} s")
        return Fitted(TrainedWordAligner(model, src_ids, tgt_ids), rows={"train": {
            "pairs": index.n_sentences, "iterations": len(lit.history), "seconds": seconds,
            "loglik_fwd": ll[0], "loglik_bwd": ll[1]}})


TASK = HMMTask()
train, evaluate = TASK.train, TASK.evaluate
