"""A LightningDataModule over an encoded `ParallelCorpus` (optionally cached, memory-mapped).

    dm = ParallelDataModule(src="train.e.gz", tgt="train.f.gz", lowercase=True,
                            max_tokens=8192, cache_dir="outputs/corpus")
    dm.setup("fit"); batch = next(iter(dm.train_dataloader()))   # a `Batch`

Batches are length-bucketed (`bucket_batches`); the batch order is reshuffled every epoch
from `seed` + epoch, so runs are reproducible. With `cache_dir`, the encoded corpus is saved
once and later runs open it with `np.load(mmap_mode="r")`; the cache is rebuilt whenever
the inputs (path, size, mtime) or the normalisation options differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Sampler

from aligners.data.corpus import ParallelCorpus, bucket_batches
from aligners.errors import AlignersInputError

__all__ = ["BucketBatchSampler", "ParallelDataModule"]


class BucketBatchSampler(Sampler[list[int]]):
    """Yields length-bucketed index batches; a new shuffle (seed + epoch) on every pass."""

    def __init__(self, src_lengths: np.ndarray, tgt_lengths: np.ndarray, *,
                 batch_size: int | None = None, max_tokens: int | None = None,
                 shuffle: bool = True, seed: int = 0):
        self.src_lengths, self.tgt_lengths = src_lengths, tgt_lengths
        self.batch_size, self.max_tokens = batch_size, max_tokens
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0
        self._n = len(self._batches(0))

    def _batches(self, epoch: int) -> list[np.ndarray]:
        gen = torch.Generator().manual_seed(self.seed + epoch)
        return bucket_batches(self.src_lengths, self.tgt_lengths, batch_size=self.batch_size,
                              max_tokens=self.max_tokens, shuffle=self.shuffle, generator=gen)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._batches(self.epoch)
        self.epoch += 1
        return (b.tolist() for b in batches)

    def __len__(self) -> int:
        return self._n  # the split depends on lengths only, not on the shuffle


def _stamp(path: str | None) -> list | None:
    if path is None or path == "-":
        return None
    st = Path(path).stat()
    return [str(Path(path).resolve()), st.st_size, st.st_mtime_ns]


class ParallelDataModule(pl.LightningDataModule):
    """Training batches over parallel text given as two files or one `src ||| tgt` file."""

    def __init__(self, src: str, tgt: str | None = None, *, lowercase: bool = False,
                 ascii_split: bool = False, min_count: int = 1, max_size: int | None = None,
                 batch_size: int | None = None, max_tokens: int | None = 8192,
                 shuffle: bool = True, seed: int = 0, cache_dir: str | None = None,
                 num_workers: int = 0):
        super().__init__()
        self.save_hyperparameters()
        self.corpus: ParallelCorpus | None = None

    def _options(self) -> dict:
        h = self.hparams
        return {"src_stamp": _stamp(h.src), "tgt_stamp": _stamp(h.tgt), "lowercase": h.lowercase,
                "ascii_split": h.ascii_split, "min_count": h.min_count, "max_size": h.max_size}

    def setup(self, stage: str | None = None) -> None:
        if self.corpus is not None:
            return
        h = self.hparams
        for p in (h.src, h.tgt):
            if p is not None and p != "-" and not Path(p).exists():
                raise AlignersInputError("file not found", path=p)
        opts = self._options()
        cache = None if h.cache_dir is None else Path(h.cache_dir)
        if cache is not None and (cache / "meta.json").exists():
            meta = json.loads((cache / "meta.json").read_text())
            if meta.get("options") == json.loads(json.dumps(opts)):
                self.corpus = ParallelCorpus.load(cache)
                return
        corpus = ParallelCorpus.build(h.src, h.tgt, lowercase=h.lowercase,
                                      ascii_split=h.ascii_split, min_count=h.min_count,
                                      max_size=h.max_size)
        corpus.meta["options"] = opts
        if cache is not None:
            corpus.save(cache)
            corpus = ParallelCorpus.load(cache)
        self.corpus = corpus

    def _loader(self, shuffle: bool) -> DataLoader:
        if self.corpus is None:
            self.setup()
        h = self.hparams
        sampler = BucketBatchSampler(self.corpus.src_lengths, self.corpus.tgt_lengths,
                                     batch_size=h.batch_size, max_tokens=h.max_tokens,
                                     shuffle=shuffle, seed=h.seed)
        return DataLoader(range(len(self.corpus)), batch_sampler=sampler,
                          collate_fn=self.corpus.collate, num_workers=h.num_workers)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.hparams.shuffle)

    def predict_dataloader(self) -> DataLoader:
        """Unshuffled, length-bucketed; use `Batch.index` to restore corpus order."""
        return self._loader(False)
