"""Task `hmm`: EM training of the two-direction word aligner under Lightning.

One EM iteration = one epoch (manual optimisation): `training_step` runs the E-step of one
length-bucketed batch into count buffers; `on_train_epoch_end` all-reduces the counts
across processes (DDP) and runs the M-step. Each rank takes every world_size-th batch, so
2 processes give the same tables as 1. After training, rank 0 picks the decoding
(method, threshold, symmetrization) on the tuning split (Hansards trial) and prints the
AER table of every evaluation split; the scores go to `<run>/metrics.json` (split -> metric
-> value) and the model folder to `<run>/model` (`aligners.load` reads it back;
`python evaluate.py ... ckpt_path=<run>/model` scores it again). The maths lives in
`aligners.models.hmm.agreement`; the data path in `aligners.data.bitext`.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import asdict
from pathlib import Path

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.utils.data import DataLoader, Sampler

from aligners.data.bitext import PairIndex, build_index
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.export import resolve_model_folder
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner, WordDecoding

__all__ = [
    "ShardSampler",
    "LitWordAligner",
    "choose_decoding",
    "train",
    "evaluate",
]


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


class LitWordAligner(pl.LightningModule):
    """Orchestration only: E-step per batch, all-reduce + M-step per epoch.

    Hyper-parameters are plain values (vocabulary sizes, pair-table size, the
    WordAlignConfig as a dict), so `LitWordAligner.load_from_checkpoint(path)` rebuilds the
    module and fills its tables from the checkpoint. `model` (an existing WordAligner) and
    `index` (the training PairIndex, needed only to train) are not hyper-parameters.
    """

    def __init__(self, n_src_words: int, n_tgt_words: int, n_pairs: int,
                 config: dict | None = None, *, model: WordAligner | None = None,
                 index: PairIndex | None = None):
        super().__init__()
        self.automatic_optimization = False
        if model is None:
            model = WordAligner(keys=torch.zeros(n_pairs, dtype=torch.long),
                                n_src_words=n_src_words, n_tgt_words=n_tgt_words,
                                config=WordAlignConfig(**(config or {})))
        elif (model.n_src_words, model.n_tgt_words, model.keys.numel()) != (
                n_src_words, n_tgt_words, n_pairs):
            raise ValueError("model does not match n_src_words / n_tgt_words / n_pairs")
        self.model = model
        self.index = index
        self.history: list[list[float]] = []
        # DDP refuses modules without trainable parameters; EM never uses gradients.
        self._ddp_anchor = nn.Parameter(torch.zeros(1))
        self.save_hyperparameters({"n_src_words": n_src_words, "n_tgt_words": n_tgt_words,
                                   "n_pairs": n_pairs, "config": asdict(model.config)})

    @classmethod
    def from_model(cls, model: WordAligner, index: PairIndex | None = None) -> LitWordAligner:
        """Wrap an existing model (its tables are used, not copied)."""
        return cls(model.n_src_words, model.n_tgt_words, model.keys.numel(),
                   asdict(model.config), model=model, index=index)

    def train_dataloader(self) -> DataLoader:
        if self.index is None:
            raise ValueError("LitWordAligner needs `index=` (the training PairIndex) to train")
        rank = self.global_rank if self.trainer is not None else 0
        world = self.trainer.world_size if self.trainer is not None else 1
        sampler = ShardSampler(len(self.index), rank=rank, world_size=world)
        return DataLoader(_BatchNumbers(len(self.index)), batch_size=None, sampler=sampler)

    def configure_optimizers(self):
        return None

    def on_train_start(self) -> None:
        if self.index is not None:  # batches move to the model's device once, not per step
            self.index.to(self.model.keys.device)

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
    token strings of a large training text are never all held in memory). `data.lowercase`:
    every text lowercased (the literature's Hansards protocol)."""
    from aligners.data.datasets import iter_parallel

    low = bool(cfg.data.get("lowercase", False))
    gold = {s: _gold_split(cfg, s) for s in cfg.data.eval_splits}
    tune = _gold_split(cfg, cfg.data.tune_split) if cfg.data.get("tune_split") else None

    def stream():
        if cfg.data.get("train_split"):
            it = iter_parallel(cfg.data.name, cfg.data.train_split, lowercase=low)
            limit = cfg.data.get("train_limit")
            yield from (itertools.islice(it, limit) if limit else it)
        for pairs in [*gold.values(), tune or []]:
            for p in pairs:
                yield p.src, p.tgt

    return stream(), gold, tune


def _gold_split(cfg: DictConfig, split: str) -> list:
    """The gold AlignedPairs of `split` of cfg.data, lowercased under `data.lowercase`."""
    from aligners.data.datasets import load, lowercased

    pairs = load(cfg.data.name, split)
    return lowercased(pairs) if cfg.data.get("lowercase", False) else pairs


def _score(gold, links):
    from aligners.metrics import evaluate_alignments

    return evaluate_alignments([p.alignment for p in gold], links, breakdowns=False)


def choose_decoding(model: WordAligner, src_ids: WordIds, tgt_ids: WordIds, gold, grid: dict):
    """Grid-search (method, threshold, heuristic) by AER on `gold` (a tuning split), through
    the one chooser (`aligners.inference.choose`)."""
    from aligners.inference.choose import choose_decoding as choose
    from aligners.models.hmm.decode import combine, decode_corpus

    index = build_index([(p.src, p.tgt) for p in gold], src_ids, tgt_ids, keys=model.keys)

    def score(method, th, heuristics):
        dec = decode_corpus(model, index, method=method, threshold=th)
        return [_score(gold, combine(dec, h)).micro.aer for h in heuristics]

    return choose(grid, score, viterbi_threshold=0.0)


def _table(rows) -> str:
    head = f"{'split':<12} {'decoding':<34} {'prec':>6} {'rec':>6} {'AER':>7} {'pairs':>6}"
    out = [head, "-" * len(head)]
    for name, desc, s, n in rows:
        out.append(f"{name:<12} {desc:<34} {s.precision:6.4f} {s.recall:6.4f} {s.aer:7.4f} {n:6d}")
    return "\n".join(out)


def _score_splits(model: WordAligner, src_ids: WordIds, tgt_ids: WordIds,
                  splits: dict, dec: WordDecoding, out_dir: Path | None = None
                  ) -> tuple[dict, list]:
    """Decode and score each gold split: ({split: {aer, precision, recall, f1}}, table rows);
    with `out_dir`, each split's links also go to `out_dir/alignments.<split>.txt` (Pharaoh,
    what `aligners align` writes for the same text and decoding)."""
    from aligners.data.pharaoh import link_line
    from aligners.models.hmm.decode import combine, decode_corpus

    metrics, rows = {}, []
    desc = f"{dec.method}>{dec.threshold:g} {dec.symmetrize}"
    for split, g in splits.items():
        sub = build_index([(p.src, p.tgt) for p in g], src_ids, tgt_ids, keys=model.keys)
        out = decode_corpus(model, sub, method=dec.method, threshold=float(dec.threshold))
        links = combine(out, dec.symmetrize)
        s = _score(g, links).micro
        if out_dir is not None:
            with open(out_dir / f"alignments.{split}.txt", "w", encoding="utf-8") as fh:
                fh.writelines(link_line(sorted(ls)) + "\n" for ls in links)
        rows.append((split, desc, s, len(g)))
        metrics[split] = {"aer": s.aer, "precision": s.precision, "recall": s.recall,
                          "f1": s.f1}
    return metrics, rows


def _decoding(cfg: DictConfig) -> WordDecoding:
    """cfg.model.decoding over the WordDecoding defaults (unknown keys are an error)."""
    given = OmegaConf.to_container(cfg.model.get("decoding") or {})
    unknown = set(given) - set(WordDecoding.__dataclass_fields__)
    if unknown:
        raise AlignersInputError(f"model.decoding: unknown keys {sorted(unknown)}")
    return WordDecoding(**given)


def train(cfg: DictConfig) -> dict:
    """Train on cfg.data, tune decoding on cfg.data.tune_split, score cfg.data.eval_splits.

    Writes `<run>/metrics.json` ({split: {aer, precision, recall, f1}}, the tuning split
    included, and "train": {pairs, iterations, seconds, loglik_fwd, loglik_bwd}) and the model
    folder `<run>/model`; returns the metrics dict. `cfg.ckpt_path` (a Lightning
    checkpoint) resumes an interrupted training.
    """
    from aligners.metrics import write_metrics_json
    from aligners.models.hmm.saved import save_word_aligner
    from aligners.training.trainer import build_trainer

    torch.set_num_threads(int(cfg.get("threads", 1)))
    pl.seed_everything(int(cfg.seed), verbose=False)
    t0 = time.time()
    pairs, gold, tune = _load_pairs(cfg)
    src_ids, tgt_ids = WordIds(), WordIds()
    index = build_index(pairs, src_ids, tgt_ids, cells=int(cfg.model.batch_cells))
    mcfg = {k: v for k, v in OmegaConf.to_container(cfg.model).items()
            if k in WordAlignConfig.__dataclass_fields__}
    model = WordAligner.from_index(index, WordAlignConfig(**mcfg))
    lit = LitWordAligner.from_model(model, index)
    trainer = build_trainer(cfg, max_epochs=model.n_iterations, use_distributed_sampler=False,
                            limit_val_batches=0)
    trainer.fit(lit, ckpt_path=cfg.get("ckpt_path"))
    train_s = time.time() - t0
    if not trainer.is_global_zero:
        return {}
    dec = _decoding(cfg)
    splits = dict(gold)
    if tune is not None and cfg.model.get("tune_grid"):
        chosen, tune_aer = choose_decoding(model, src_ids, tgt_ids, tune,
                                           OmegaConf.to_container(cfg.model.tune_grid))
        dec = WordDecoding(**chosen)
        print(f"decoding chosen on {cfg.data.tune_split} (AER {tune_aer:.4f}): {chosen}")
    if tune is not None:
        splits.setdefault(cfg.data.tune_split, tune)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics, rows = _score_splits(model, src_ids, tgt_ids, splits, dec, out_dir)
    ll = lit.history[-1] if lit.history else [0.0, 0.0]
    metrics["train"] = {"pairs": index.n_sentences, "iterations": len(lit.history),
                        "seconds": train_s, "loglik_fwd": ll[0], "loglik_bwd": ll[1]}
    print(f"word alignment: {cfg.data.name}, {index.n_sentences} training pairs, "
          f"{model.n_iterations} EM iterations, {train_s:.1f} s")
    print(_table([r for r in rows if r[0] in gold]))
    save_word_aligner(out_dir / "model", model, src_ids, tgt_ids, decoding=dec)
    write_metrics_json(out_dir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: DictConfig) -> dict:
    """Score a saved model folder on cfg.data's evaluation splits:
    `python evaluate.py experiment=hmm_agreement_hansards_20k ckpt_path=<run>/model`.

    Decodes with the folder's saved decoding; writes `metrics.json` into the run folder
    (cfg.paths.output_dir) and returns it. `model_dir=` is refused (use ckpt_path).
    """
    from aligners.export import load as load_model
    from aligners.metrics import write_metrics_json
    from aligners.models.hmm.saved import TrainedWordAligner

    if cfg.get("model_dir") is not None:
        raise AlignersInputError("model_dir= is not read; pass the model folder as ckpt_path=")
    folder = resolve_model_folder(cfg.get("ckpt_path"))
    aligner = load_model(folder)
    if not isinstance(aligner, TrainedWordAligner):
        raise AlignersInputError("ckpt_path: not a model folder of the hmm family",
                                 path=str(folder))
    torch.set_num_threads(int(cfg.get("threads", 1)))
    splits = {split: _gold_split(cfg, split) for split in cfg.data.eval_splits}
    metrics, rows = _score_splits(aligner.model, aligner.src_ids, aligner.tgt_ids, splits,
                                  aligner.decoding)
    print(_table(rows))
    out = cfg.get("paths", {}).get("output_dir")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        write_metrics_json(Path(out) / "metrics.json", metrics)
    return metrics
