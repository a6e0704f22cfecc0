"""The one bitext path: encoded sentence pairs, length bucketing, the pair-id index, disk cache.

A bitext of N sentence pairs is encoded once into integer ids (`aligners.data.vocab.WordIds`:
0 = NULL, 1 = unknown word), sorted by length and cut into batches whose padded cells
`B * I * J` stay under a budget (`cells`). Every batch carries `pair_ids (B, I, J)`: the id of
the (source word, target word) pair of each cell in one sorted table of co-occurring pairs
(keys `src_id * Vt + tgt_id`), so that a lexical table is a flat vector of P + 1 floats
(slot P: pairs never seen in training / pads). Both directions share one index. With
`cache_dir` the per-batch pair ids live in memory-mapped `.npy` files (large corpora).

Memory per batch is bounded whatever the sentence lengths: a batch holds at most `cells`
cells B * I * J and at most 4 * `cells` cells B * max(I, J)^2 (the HMM's jump counts), and a
pair with more than `MAX_TOKENS` tokens on one side is left out of every batch (like an
empty pair: it gets an empty output line) with a one-line warning on stderr naming its line.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, fields

import numpy as np
import torch

from aligners.data import DEFAULT_CELLS, MAX_TOKENS, warn_too_long
from aligners.data._pairtable import (  # noqa: F401 (_encode_stream: tests/test_file_ids.py)
    _encode_stream,
    cut_batches,
    device_pair_ids,
    distinct_keys,
    fill_pair_ids,
    pad_ids,
    spans,
)
from aligners.data.file_ids import ParallelFiles
from aligners.data.heap import release_free_heap as _release_free_heap
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError

__all__ = ["DEFAULT_CELLS", "MAX_TOKENS", "Batch", "PairIndex", "build_index", "gpu_or_none",
           "plan_batches"]


_POPULATE_MIN = 1 << 20  # int32s: smaller stores come from the heap
_FILL_CELLS = 1 << 25  # with a disk cache: pair ids computed for this many cells at a time


@dataclass
class Batch:
    """One padded batch. Shapes: src (B, I), tgt (B, J), pair_ids (B, I, J) int32, lengths (B,).

    Padding: word id NULL and pair id P. `rows` are the sentence numbers in the input order.
    """

    rows: torch.Tensor
    src: torch.Tensor
    tgt: torch.Tensor
    src_lengths: torch.Tensor
    tgt_lengths: torch.Tensor
    pair_ids: torch.Tensor

    def to(self, device) -> Batch:
        """The batch on `device` (a no-op when it is there already)."""
        if self.src.device == torch.device(device):
            return self
        return Batch(*(getattr(self, f.name).to(device) for f in fields(self)))

    @property
    def mask(self) -> torch.Tensor:
        """(B, I, J) bool: real cells."""
        i = torch.arange(self.src.shape[1], device=self.src.device)
        j = torch.arange(self.tgt.shape[1], device=self.src.device)
        return (i[None, :, None] < self.src_lengths[:, None, None]) & (
            j[None, None, :] < self.tgt_lengths[:, None, None]
        )


def plan_batches(src_len: np.ndarray, tgt_len: np.ndarray, *, cells: int, max_batch: int):
    """Length bucketing: src_len, tgt_len (N,) -> list of sentence-number arrays.

    Non-empty pairs of at most `MAX_TOKENS` tokens a side, sorted by (max length, I, J), cut
    into chunks of at most `max_batch` pairs, `cells` padded cells B * I * J and 4 * `cells`
    cells B * max(I, J)^2 (a longer single pair still forms a batch); empty and too long
    pairs are left out. Cost O(N log N) (the cuts: one compiled pass).
    """
    src_len = np.asarray(src_len, dtype=np.int64)
    tgt_len = np.asarray(tgt_len, dtype=np.int64)
    keep = np.flatnonzero((src_len > 0) & (tgt_len > 0) & (src_len <= MAX_TOKENS)
                          & (tgt_len <= MAX_TOKENS))
    longest = np.maximum(src_len[keep], tgt_len[keep])
    order = keep[np.lexsort((tgt_len[keep], src_len[keep], longest))]
    ends = cut_batches(src_len[order], tgt_len[order], np.int64(max_batch), np.int64(cells))
    return np.split(order, ends[:-1]) if len(ends) else []


def _populated_int32(n: int) -> np.ndarray:
    """An uninitialised (n,) int32 array whose pages are mapped at once (Linux
    MAP_POPULATE: one call instead of a page fault per 4 KiB; 7x less CPU on a 560 MB index
    store in a VM); np.empty where that is unavailable. Freed with the last view of it."""
    flags = getattr(mmap, "MAP_POPULATE", 0)
    if n < _POPULATE_MIN or not flags:
        return np.empty(n, dtype=np.int32)
    try:
        buf = mmap.mmap(-1, 4 * n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags)
    except (OSError, ValueError):
        return np.empty(n, dtype=np.int32)
    return np.frombuffer(buf, dtype=np.int32)


def _flatten(sents: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sentences of token ids -> (flat (T,) int32, offsets (N + 1,) int64)."""
    off = np.zeros(len(sents) + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(x) for x in sents), dtype=np.int64, count=len(sents)),
              out=off[1:])
    flat = np.concatenate([np.asarray(x, dtype=np.int32).reshape(-1) for x in sents]) \
        if len(sents) else np.zeros(0, np.int32)
    return flat, off


def _pad(rows: np.ndarray, flat: np.ndarray, off: np.ndarray) -> np.ndarray:
    """(B, max length) int64 token ids of sentences `rows` (0 = NULL on padding)."""
    start, n = off[rows], off[rows + 1] - off[rows]
    pos = np.arange(int(n.max()))
    inside = pos[None, :] < n[:, None]
    return np.where(inside, flat[np.where(inside, start[:, None] + pos, 0)], 0).astype(np.int64)


class PairIndex:
    """The encoded, batched bitext and its table of co-occurring pairs.

    `src`, `tgt`: N sentences of token ids each (see `from_flat` for flat arrays); keywords
    `n_src_words`, `n_tgt_words` (the word ids' bounds), `keys`, `cells`, `max_batch`,
    `cache_dir`, `threads`, `device`.
    Build cost: O(total cells + P log P) time, two compiled passes over the cells source
    word by source word, the table's and then the ids (one with a given table:
    `aligners.data._pairtable`), in word ranges on `threads` threads (None: every core
    this process may use; the id store's pages are mapped meanwhile); memory 4 bytes per
    cell (int32 ids), kept in RAM or, with `cache_dir`, in .npy files read back batch by
    batch, plus about 26 bytes per source token and 8 per distinct pair while building.
    `keys` (sorted int64 `src*Vt+tgt`) fixes the pair table (e.g. a loaded model's): pairs
    outside it get id P. With `device` (and no `cache_dir`) the batches go there first and
    the table and ids are found there with torch's unique / searchsorted
    (`device_pair_ids`): the same keys and ids, none on the host.
    """

    def __init__(self, src: Sequence[np.ndarray], tgt: Sequence[np.ndarray], **kw):
        self._build(*_flatten(src), *_flatten(tgt), **kw)

    @classmethod
    def from_flat(cls, src: np.ndarray, src_off: np.ndarray, tgt: np.ndarray,
                  tgt_off: np.ndarray, **kw) -> PairIndex:
        """The index of N sentence pairs given as flat token ids src (Ts,), tgt (Tt,) int32
        and offsets src_off, tgt_off (N + 1,) int64 (sentence k = src[src_off[k]:src_off[k +
        1]]); keyword arguments as the constructor's. Same result as the constructor."""
        self = cls.__new__(cls)
        self._build(np.asarray(src, np.int32), np.asarray(src_off, np.int64),
                    np.asarray(tgt, np.int32), np.asarray(tgt_off, np.int64), **kw)
        return self

    def _build(self, src, src_off, tgt, tgt_off, *, n_src_words: int, n_tgt_words: int,
               keys: torch.Tensor | None = None, cells: int = DEFAULT_CELLS,
               max_batch: int | None = None, cache_dir: str | None = None,
               threads: int | None = None, device=None):
        if len(src_off) != len(tgt_off):
            raise AlignersInputError(f"source has {len(src_off) - 1} sentences but target "
                                     f"has {len(tgt_off) - 1}")
        threads = max(1, len(os.sched_getaffinity(0)) if threads is None else int(threads))
        for ids, n, side in ((src, n_src_words, "source"), (tgt, n_tgt_words, "target")):
            if ids.size and not (0 <= ids.min() and ids.max() < n):  # (the kernels index
                raise ValueError(f"{side} word ids must lie in [0, {n})")  # by word id)
        self.n_sentences = len(src_off) - 1
        self.n_src_words = n_src_words
        self.n_tgt_words = n_tgt_words
        src_len, tgt_len = np.diff(src_off), np.diff(tgt_off)
        self.src_lengths, self.tgt_lengths = src_len, tgt_len
        long = np.flatnonzero(np.maximum(src_len, tgt_len) > MAX_TOKENS)
        self.too_long = long  # row numbers left out (empty output lines)
        for r in long:
            warn_too_long(int(r), int(src_len[r]), int(tgt_len[r]))
        if max_batch is None:  # 4096 pairs per 1M cells: short pairs fill larger budgets too
            max_batch = max(4096, 4096 * cells // DEFAULT_CELLS)
        plans = plan_batches(src_len, tgt_len, cells=cells, max_batch=max_batch)
        shapes = [(len(r), int(src_len[r].max()), int(tgt_len[r].max())) for r in plans]
        store = None  # the in-memory id store, its pages mapped on a thread meanwhile
        if device is None and cache_dir is None and plans:
            pool = ThreadPoolExecutor(max_workers=1)  # (its thread ends with the task)
            store = pool.submit(_populated_int32, sum(b * i * j for b, i, j in shapes))
            pool.shutdown(wait=False)
        self._words = [(torch.from_numpy(rows), torch.from_numpy(_pad(rows, src, src_off)),
                        torch.from_numpy(_pad(rows, tgt, tgt_off)),
                        torch.from_numpy(src_len[rows]), torch.from_numpy(tgt_len[rows]))
                       for rows in plans]
        self._dir = None
        if device is not None and cache_dir is None and plans:
            self._words = [tuple(x.to(device) for x in w) for w in self._words]
            self._ids, self.keys = device_pair_ids(self._words, n_tgt_words, keys)
            self.n_pairs = int(self.keys.numel())
            _release_free_heap()  # (the host copies of the padded words)
            return
        if keys is None:
            rows = np.concatenate(plans) if plans else np.zeros(0, np.int64)
            keys = torch.from_numpy(distinct_keys(src, src_off, tgt, tgt_off, rows,
                                                  n_src_words, n_tgt_words, threads=threads))
        if cache_dir is not None:
            os.makedirs(cache_dir, exist_ok=True)
            self._dir = tempfile.mkdtemp(prefix="pairs-", dir=cache_dir)
            weakref.finalize(self, shutil.rmtree, self._dir, True)  # removed with the index
        self._ids = self._fill_ids(plans, shapes, src, src_off, tgt, tgt_off, threads, keys,
                                   store)
        _release_free_heap()

    def _fill_ids(self, plans, shapes, src, src_off, tgt, tgt_off, threads: int,
                  keys: torch.Tensor, store: Future | None) -> list:
        """Every batch's (B, I, J) int32 pair ids (P on padding): tensors viewing one
        allocation for all batches (no heap holes between them), or with a disk cache the
        paths of .npy files written `_FILL_CELLS` cells at a time. Sets `keys` (the
        table, sorted) and `n_pairs`; `shapes`: each batch's (B, I, J); `store`: the
        in-memory store being mapped."""
        self.keys = keys.cpu()  # the lookup runs on the CPU, whatever the model's device
        self.n_pairs = int(keys.numel())
        if not self._words:
            return []
        sizes = np.array([b * i * j for b, i, j in shapes], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(sizes)))
        if self._dir is None:  # one chunk: the whole store
            chunks, buf = [(0, len(shapes))], store.result()
        else:  # the most batches within _FILL_CELLS cells, at least one
            chunks = spans(starts, _FILL_CELLS)
            buf = np.empty(max((int(starts[k1] - starts[k0]) for k0, k1 in chunks),
                               default=0), dtype=np.int32)
        out: list = []
        for k0, k1 in chunks:
            chunk = buf[:int(starts[k1] - starts[k0])]
            rows = np.concatenate(plans[k0:k1])
            base = np.concatenate([starts[k] - starts[k0] + np.arange(shapes[k][0])
                                   * shapes[k][1] * shapes[k][2] for k in range(k0, k1)])
            width, height = (np.concatenate([np.full(shapes[k][0], shapes[k][x]) for k in
                                             range(k0, k1)]) for x in (2, 1))
            fill_pair_ids(np.ascontiguousarray(self.keys.numpy(), dtype=np.int64), src, src_off,
                          tgt, tgt_off, rows, base, width, self.n_src_words, self.n_tgt_words,
                          chunk, threads=threads)
            pad_ids(base, width, height, self.src_lengths[rows], self.tgt_lengths[rows],
                    np.int32(self.n_pairs), chunk)
            for k in range(k0, k1):
                ids = chunk[starts[k] - starts[k0]:starts[k + 1] - starts[k0]].reshape(shapes[k])
                if self._dir is None:
                    out.append(torch.from_numpy(ids))
                else:
                    path = os.path.join(self._dir, f"{k}.npy")
                    np.save(path, ids)
                    out.append(path)
        return out

    def __len__(self) -> int:
        return len(self._words)

    def to(self, device) -> PairIndex:
        """Move every batch to `device` once (so EM iterations copy nothing); an index with
        a disk cache stays on the CPU (its batches are read back one at a time). Returns
        self. Memory on `device`: 4 bytes per cell plus the padded words."""
        device = torch.device(device)
        if self._dir is None and self._words and self._words[0][1].device != device:
            self._words = [tuple(x.to(device) for x in w) for w in self._words]
            self._ids = [x.to(device) for x in self._ids]
        return self

    def batch(self, k: int) -> Batch:
        """Batch k (pair ids read back from the disk cache when there is one). O(B I J)."""
        ids = self._ids[k]
        if isinstance(ids, str):
            ids = torch.from_numpy(np.load(ids))
        return Batch(*self._words[k], ids)

    def __iter__(self) -> Iterator[Batch]:
        return map(self.batch, range(len(self)))


def build_index(
    pairs: Iterable[tuple[Sequence[str], Sequence[str]]],
    src_ids: WordIds,
    tgt_ids: WordIds,
    *,
    cells: int = DEFAULT_CELLS,
    keys: torch.Tensor | None = None,
    cache_dir: str | None = None,
    threads: int | None = None,
    device=None,
) -> PairIndex:
    """N token pairs -> PairIndex of ceil-ish(N cells / `cells`) batches (see `PairIndex`).

    Encodes the pairs as they stream in (ids added to `src_ids`/`tgt_ids` unless frozen;
    frozen: unseen words -> unknown; `_pairtable._encode_stream`); a
    `aligners.data.file_ids.ParallelFiles` straight from its files' bytes where that path
    applies (the same ids). `keys` fixes the pair table (a loaded
    model's); `threads` and `device` (where the table and ids are found: None = the CPU
    kernels) as `PairIndex`'s.
    Memory: 4 bytes per token plus the index; the token strings are not kept (only the
    current chunk's).
    """
    vocabs = (src_ids, tgt_ids)
    fast = pairs.encode(vocabs) if isinstance(pairs, ParallelFiles) else None
    (src, src_off), (tgt, tgt_off) = fast or _encode_stream(pairs, vocabs)
    return PairIndex.from_flat(src, src_off, tgt, tgt_off, n_src_words=len(src_ids),
                               n_tgt_words=len(tgt_ids), keys=keys, cells=cells,
                               cache_dir=cache_dir, threads=threads, device=device)


def gpu_or_none(device) -> torch.device | None:
    """`device` when it is a GPU (the index is then built there), else None (on the CPU the
    numba kernels are faster than torch's sort)."""
    device = torch.device(device)
    return device if device.type == "cuda" else None
