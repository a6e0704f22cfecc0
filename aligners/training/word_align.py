"""Task `word_align`: EM training of the two-direction word aligner under Lightning.

One EM iteration = one epoch (manual optimisation): `training_step` runs the E-step of one
length-bucketed batch into count buffers; `on_train_epoch_end` all-reduces the counts
across processes (DDP) and runs the M-step. Each rank takes every world_size-th batch, so
2 processes give the same tables as 1. After training, rank 0 picks the decoding
(method, threshold, symmetrization) on the tuning split (Hansards trial) and prints the
AER table of every evaluation split. The maths lives in `aligners.models.word_aligner`.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.utils.data import DataLoader, Sampler

from aligners.data.bitext import PairIndex, build_index
from aligners.data.vocab import WordIds
from aligners.models.word_aligner import WordAlignConfig, WordAligner

__all__ = [
    "build_index",
    "train_em",
    "ShardSampler",
    "ddp_strategy",
    "LitWordAligner",
    "choose_decoding",
    "train",
    "evaluate",
]


def train_em(model: WordAligner, index: PairIndex, *, progress=None) -> list[list[float]]:
    """Plain single-process EM (the CLI path); the Lightning path gives the same tables."""
    return model.fit(index, progress=progress)


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


class _BatchNumbers(torch.utils.data.Dataset):
    """Item k is the batch number k itself (-1 = padding step, never wrapped around)."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> int:
        return k


def ddp_strategy(name):
    """`"ddp"` -> a DDPStrategy that does not broadcast the (large) tables every step."""
    if name == "ddp":
        from pytorch_lightning.strategies import DDPStrategy

        return DDPStrategy(broadcast_buffers=False)
    return name


class LitWordAligner(pl.LightningModule):
    """Orchestration only: E-step per batch, all-reduce + M-step per epoch."""

    def __init__(self, model: WordAligner, index: PairIndex):
        super().__init__()
        self.automatic_optimization = False
        self.model = model
        self.index = index
        self.history: list[list[float]] = []
        # DDP refuses modules without trainable parameters; EM never uses gradients.
        self._ddp_anchor = nn.Parameter(torch.zeros(1))
        self.save_hyperparameters(model.hparams())

    def train_dataloader(self) -> DataLoader:
        rank = self.global_rank if self.trainer is not None else 0
        world = self.trainer.world_size if self.trainer is not None else 1
        sampler = ShardSampler(len(self.index), rank=rank, world_size=world)
        return DataLoader(_BatchNumbers(len(self.index)), batch_size=None, sampler=sampler)

    def configure_optimizers(self):
        return None

    def on_train_epoch_start(self) -> None:
        self.model.reset_counts()

    def training_step(self, k, batch_idx):
        if int(k) < 0:  # padding step of a rank with fewer batches
            return
        stage = self.model.stage_of(int(self.model.iteration))
        self.model.accumulate(self.index.batch(int(k)), stage=stage)

    def on_train_epoch_end(self) -> None:
        stage = self.model.stage_of(int(self.model.iteration))
        self.model.all_reduce_counts()
        ll = self.model.m_step(stage=stage)
        self.history.append(ll.tolist())
        self.log_dict({"loglik_fwd": float(ll[0]), "loglik_bwd": float(ll[1])},
                      on_epoch=True, rank_zero_only=True)


# ------------------------------------------------------------------ data + evaluation
def _load_pairs(cfg: DictConfig):
    """(stream of training token pairs, {split: gold AlignedPairs}, tuning AlignedPairs or
    None) for cfg.data; the gold and tuning text joins the training text (streamed, so the
    token strings of a large training text are never all held in memory)."""
    from aligners.data.datasets import iter_parallel, load

    gold = {s: load(cfg.data.name, s) for s in cfg.data.eval_splits}
    tune = load(cfg.data.name, cfg.data.tune_split) if cfg.data.get("tune_split") else None

    def stream():
        if cfg.data.get("train_split"):
            it = iter_parallel(cfg.data.name, cfg.data.train_split)
            limit = cfg.data.get("train_limit")
            yield from (itertools.islice(it, limit) if limit else it)
        for pairs in [*gold.values(), tune or []]:
            for p in pairs:
                yield p.src, p.tgt

    return stream(), gold, tune


def _score(gold, links):
    from aligners.metrics import evaluate_alignments

    return evaluate_alignments([p.alignment for p in gold], links, breakdowns=False)


def choose_decoding(model: WordAligner, src_ids: WordIds, tgt_ids: WordIds, gold, grid: dict):
    """Grid-search (method, threshold, heuristic) by AER on `gold` (a tuning split)."""
    from aligners.inference.decode import combine, decode_corpus

    index = build_index([(p.src, p.tgt) for p in gold], src_ids, tgt_ids, keys=model.keys)
    best = None
    for method in grid["methods"]:
        thresholds = [0.0] if method == "viterbi" else list(grid["thresholds"])
        heuristics = ["none"] if method == "agreement" else list(grid["heuristics"])
        for th in thresholds:
            dec = decode_corpus(model, index, method=method, threshold=th)
            for h in heuristics:
                aer = _score(gold, combine(dec, h)).micro.aer
                if best is None or aer < best[0] - 1e-12:
                    best = (aer, {"method": method, "threshold": th, "symmetrize": h})
    return best[1], best[0]


def _table(rows) -> str:
    head = f"{'split':<12} {'decoding':<34} {'prec':>6} {'rec':>6} {'AER':>7} {'pairs':>6}"
    out = [head, "-" * len(head)]
    for name, desc, s, n in rows:
        out.append(f"{name:<12} {desc:<34} {s.precision:6.4f} {s.recall:6.4f} {s.aer:7.4f} {n:6d}")
    return "\n".join(out)


def train(cfg: DictConfig) -> dict:
    """Train on cfg.data, tune decoding on cfg.data.tune_split, print and return AERs."""
    from hydra.utils import instantiate

    from aligners.inference.decode import combine, decode_corpus
    from aligners.training.export import save_word_aligner

    torch.set_num_threads(int(cfg.get("threads", 1)))
    pl.seed_everything(int(cfg.seed), verbose=False)
    t0 = time.time()
    pairs, gold, tune = _load_pairs(cfg)
    src_ids, tgt_ids = WordIds(), WordIds()
    index = build_index(pairs, src_ids, tgt_ids, cells=int(cfg.model.batch_cells))
    mcfg = {k: v for k, v in OmegaConf.to_container(cfg.model).items()
            if k in WordAlignConfig.__dataclass_fields__}
    model = WordAligner.from_index(index, WordAlignConfig(**mcfg))
    lit = LitWordAligner(model, index)
    callbacks = [instantiate(c) for c in cfg.get("callbacks", {}).values()]
    logger = instantiate(cfg.logger) if cfg.get("logger") else False
    strategy = ddp_strategy(cfg.trainer.get("strategy", "auto"))
    trainer = instantiate(cfg.trainer, max_epochs=model.n_iterations, callbacks=callbacks,
                          strategy=strategy,
                          logger=logger, use_distributed_sampler=False,
                          num_sanity_val_steps=0, limit_val_batches=0)
    trainer.fit(lit, ckpt_path=cfg.get("ckpt_path"))
    train_s = time.time() - t0
    if not trainer.is_global_zero:
        return {}
    dec_cfg = OmegaConf.to_container(cfg.model.decoding)
    if tune is not None and cfg.model.get("tune_grid"):
        chosen, tune_aer = choose_decoding(model, src_ids, tgt_ids, tune,
                                           OmegaConf.to_container(cfg.model.tune_grid))
        dec_cfg.update(chosen)
        print(f"decoding chosen on {cfg.data.tune_split} (AER {tune_aer:.4f}): {chosen}")
    rows, metrics = [], {"train_seconds": train_s, "loglik": lit.history}
    desc = f"{dec_cfg['method']}>{dec_cfg['threshold']:g} {dec_cfg['symmetrize']}"
    for split, g in gold.items():
        sub = build_index([(p.src, p.tgt) for p in g], src_ids, tgt_ids, keys=model.keys)
        dec = decode_corpus(model, sub, method=dec_cfg["method"],
                            threshold=float(dec_cfg["threshold"]))
        s = _score(g, combine(dec, dec_cfg["symmetrize"])).micro
        rows.append((split, desc, s, len(g)))
        metrics[f"{split}/aer"] = s.aer
        metrics[f"{split}/precision"] = s.precision
        metrics[f"{split}/recall"] = s.recall
    print(f"word alignment: {cfg.data.name}, {index.n_sentences} training pairs, "
          f"{model.n_iterations} EM iterations, {train_s:.1f} s")
    print(_table(rows))
    out_dir = Path(cfg.paths.output_dir)
    save_word_aligner(out_dir / "model", model, src_ids, tgt_ids,
                      decoding={k: dec_cfg[k] for k in ("method", "threshold", "symmetrize")})
    return metrics


def evaluate(cfg: DictConfig) -> dict:
    """Score a saved model folder on cfg.data's evaluation splits:
    `python evaluate.py experiment=hmm_agreement_hansards_20k +model_dir=outputs/.../model`."""
    from aligners.data.datasets import load
    from aligners.inference.decode import combine, decode_corpus
    from aligners.training.export import load_word_aligner

    model, src_ids, tgt_ids, saved = load_word_aligner(cfg.model_dir)
    dec_cfg = {**OmegaConf.to_container(cfg.model.decoding), **saved}
    rows, metrics = [], {}
    for split in cfg.data.eval_splits:
        g = load(cfg.data.name, split)
        sub = build_index([(p.src, p.tgt) for p in g], src_ids, tgt_ids, keys=model.keys)
        dec = decode_corpus(model, sub, method=dec_cfg["method"],
                            threshold=float(dec_cfg["threshold"]))
        s = _score(g, combine(dec, dec_cfg.get("symmetrize", "none"))).micro
        rows.append((split, dec_cfg["method"], s, len(g)))
        metrics[f"{split}/aer"] = s.aer
    print(_table(rows))
    return metrics
