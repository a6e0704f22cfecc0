"""The one bitext path: encoded sentence pairs, length bucketing, the pair-id index, disk cache.

A bitext of N sentence pairs is encoded once into integer ids (`aligners.data.vocab.WordIds`:
0 = NULL, 1 = unknown word), sorted by length and cut into batches whose padded cells
`B * I * J` stay under a budget (`cells`). Every batch carries `pair_ids (B, I, J)`: the id of
the (source word, target word) pair of each cell in one sorted table of co-occurring pairs
(keys `src_id * Vt + tgt_id`), so that a lexical table is a flat vector of P + 1 floats
(slot P: pairs never seen in training / pads). Both directions share one index. With
`cache_dir` the per-batch pair ids live in memory-mapped `.npy` files (large corpora).
Used by every word-aligner trainer, `aligners align` and the benchmarks.

Memory per batch is bounded whatever the sentence lengths: a batch holds at most `cells`
cells B * I * J and at most 4 * `cells` cells B * max(I, J)^2 (the HMM's jump counts), and a
pair with more than `MAX_TOKENS` tokens on one side is left out of every batch (like an
empty pair: it gets an empty output line) with a one-line warning on stderr naming its line.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from aligners.data import DEFAULT_CELLS
from aligners.data.heap import release_free_heap as _release_free_heap
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError

__all__ = ["DEFAULT_CELLS", "MAX_TOKENS", "Batch", "PairIndex", "build_index", "plan_batches"]

MAX_TOKENS = 2048  # longer sentences are left unaligned: one pair costs O(L^2) memory

_TRIM_EVERY = 16  # batches between returns of freed heap memory to the OS while indexing


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
        return Batch(*(x.to(device) for x in (self.rows, self.src, self.tgt, self.src_lengths,
                                              self.tgt_lengths, self.pair_ids)))

    @property
    def mask(self) -> torch.Tensor:
        """(B, I, J) bool: real cells."""
        i = torch.arange(self.src.shape[1], device=self.src.device)
        j = torch.arange(self.tgt.shape[1], device=self.src.device)
        return (i[None, :, None] < self.src_lengths[:, None, None]) & (
            j[None, None, :] < self.tgt_lengths[:, None, None]
        )


def plan_batches(src_len: np.ndarray, tgt_len: np.ndarray, *, cells: int, max_batch: int,
                 max_tokens: int = MAX_TOKENS):
    """Length bucketing: src_len, tgt_len (N,) -> list of sentence-number arrays.

    Non-empty pairs of at most `max_tokens` tokens a side, sorted by (max length, I, J), cut
    into chunks of at most `max_batch` pairs, `cells` padded cells B * I * J and 4 * `cells`
    cells B * max(I, J)^2 (a longer single pair still forms a batch); empty and too long
    pairs are left out. Cost O(N log N).
    """
    keep = np.flatnonzero((src_len > 0) & (tgt_len > 0) & (src_len <= max_tokens)
                          & (tgt_len <= max_tokens))
    longest = np.maximum(src_len[keep], tgt_len[keep])
    order = keep[np.lexsort((tgt_len[keep], src_len[keep], longest))]
    plans, start = [], 0
    n = len(order)
    while start < n:
        end = start + 1
        mi, mj = src_len[order[start]], tgt_len[order[start]]
        while end < n and end - start < max_batch:
            ni = max(mi, src_len[order[end]])
            nj = max(mj, tgt_len[order[end]])
            size = end - start + 1
            if size * int(ni) * int(nj) > cells or size * int(max(ni, nj)) ** 2 > 4 * cells:
                break
            mi, mj, end = ni, nj, end + 1
        plans.append(order[start:end])
        start = end
    return plans


def _merge_sorted_unique(merged: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    """Sorted distinct union of `merged` (sorted, distinct) and `parts` (any int64 arrays)."""
    if not parts:
        return merged
    new = np.sort(np.concatenate(parts))  # (np.unique can be much slower than sort here)
    if new.size:
        new = new[np.concatenate(([True], new[1:] != new[:-1]))]
    if merged.size:
        pos = np.searchsorted(merged, new)
        seen = merged[np.minimum(pos, merged.size - 1)] == new
        keep = ~seen
        new, pos = new[keep], pos[keep]
        return np.insert(merged, pos, new)
    return new


class PairIndex:
    """The encoded, batched bitext and its table of co-occurring pairs.

    Build cost: O(total cells) time; memory 4 bytes per cell (int32 ids), kept in RAM or,
    with `cache_dir`, in memory-mapped .npy files streamed from disk batch by batch.
    `keys` (sorted int64 `src*Vt+tgt`) fixes the pair table (e.g. a loaded model's): pairs
    outside it get id P.
    """

    def __init__(
        self,
        src: Sequence[np.ndarray],
        tgt: Sequence[np.ndarray],
        *,
        n_src_words: int,
        n_tgt_words: int,
        keys: torch.Tensor | None = None,
        cells: int = DEFAULT_CELLS,
        max_batch: int | None = None,
        cache_dir: str | None = None,
    ):
        if len(src) != len(tgt):
            raise AlignersInputError(
                f"source has {len(src)} sentences but target has {len(tgt)}"
            )
        self.n_sentences = len(src)
        self.n_src_words = n_src_words
        self.n_tgt_words = n_tgt_words
        src_len = np.fromiter((len(s) for s in src), dtype=np.int64, count=len(src))
        tgt_len = np.fromiter((len(t) for t in tgt), dtype=np.int64, count=len(tgt))
        self.src_lengths, self.tgt_lengths = src_len, tgt_len
        long = np.flatnonzero(np.maximum(src_len, tgt_len) > MAX_TOKENS)
        self.too_long = long  # row numbers left out (empty output lines)
        for r in long:
            sys.stderr.write(f"aligners: warning: line {r + 1}: {src_len[r]} x {tgt_len[r]} "
                             f"tokens, over the {MAX_TOKENS}-token limit: left unaligned\n")
        if max_batch is None:  # 4096 pairs per 1M cells: short pairs fill larger budgets too
            max_batch = max(4096, 4096 * cells // DEFAULT_CELLS)
        plans = plan_batches(src_len, tgt_len, cells=cells, max_batch=max_batch)
        self._words = [self._pad(rows, src, tgt) for rows in plans]
        if keys is None:
            keys = self._unique_keys()
        self.keys = keys.cpu()  # the lookup runs on the CPU, whatever the model's device
        self.n_pairs = int(keys.numel())
        self._dir = None
        if cache_dir is not None:
            os.makedirs(cache_dir, exist_ok=True)
            self._dir = tempfile.mkdtemp(prefix="pairs-", dir=cache_dir)
            weakref.finalize(self, shutil.rmtree, self._dir, True)  # removed with the index
        self._ids: list = []
        store = None
        if self._dir is None:  # one allocation for all batches: no heap holes between them
            store = torch.empty(sum(s.numel() * t.shape[1] for _, s, t, _, _ in self._words),
                                dtype=torch.int32)
        offset = 0
        for k, (_, s, t, sl, tl) in enumerate(self._words):
            if k % _TRIM_EVERY == 0:
                _release_free_heap()
            n = s.numel() * t.shape[1]
            out = None if store is None else store[offset:offset + n].view(s.shape[0], -1,
                                                                            t.shape[1])
            offset += n
            ids = self._lookup(s, t, sl, tl, out=out)
            if self._dir is None:
                self._ids.append(ids)
            else:
                path = os.path.join(self._dir, f"{k}.npy")
                np.save(path, ids.numpy())
                self._ids.append(path)
        _release_free_heap()

    @staticmethod
    def _pad(rows, src, tgt):
        sl = np.fromiter((len(src[r]) for r in rows), dtype=np.int64, count=len(rows))
        tl = np.fromiter((len(tgt[r]) for r in rows), dtype=np.int64, count=len(rows))
        s = np.zeros((len(rows), sl.max()), dtype=np.int64)
        t = np.zeros((len(rows), tl.max()), dtype=np.int64)  # padded batches: small
        for b, r in enumerate(rows):
            s[b, : sl[b]] = src[r]
            t[b, : tl[b]] = tgt[r]
        return (
            torch.from_numpy(np.asarray(rows, dtype=np.int64)),
            torch.from_numpy(s),
            torch.from_numpy(t),
            torch.from_numpy(sl),
            torch.from_numpy(tl),
        )

    def _cell_keys(self, s, t, sl, tl):
        keys = s[:, :, None] * self.n_tgt_words + t[:, None, :]
        mask = (torch.arange(s.shape[1])[None, :, None] < sl[:, None, None]) & (
            torch.arange(t.shape[1])[None, None, :] < tl[:, None, None]
        )
        return keys, mask

    def _unique_keys(self) -> torch.Tensor:
        """Sorted distinct pair keys of all real cells. Memory: the result twice plus a few
        million keys of batch results (a sorted merge, not a `unique` over everything)."""
        merged = np.empty(0, dtype=np.int64)
        parts, size = [], 0
        for k, (_, s, t, sl, tl) in enumerate(self._words):
            if k % _TRIM_EVERY == 0:
                _release_free_heap()
            keys, mask = self._cell_keys(s, t, sl, tl)
            u = torch.unique(keys[mask]).numpy()
            parts.append(u)
            size += u.size
            if size > 4_000_000:
                merged = _merge_sorted_unique(merged, parts)
                parts, size = [], 0
        merged = _merge_sorted_unique(merged, parts)
        del parts
        _release_free_heap()
        return torch.from_numpy(merged)

    def _lookup(self, s, t, sl, tl, *, out: torch.Tensor | None = None) -> torch.Tensor:
        keys, mask = self._cell_keys(s, t, sl, tl)
        P = self.keys.numel()
        ids = torch.full(keys.shape, P, dtype=torch.int32) if out is None else out.fill_(P)
        if P == 0:
            return ids
        # sorted, de-duplicated queries make the binary searches cache-friendly
        uniq, inverse = torch.unique(keys[mask], return_inverse=True)
        pos = torch.searchsorted(self.keys, uniq).clamp_(max=P - 1)
        pos = torch.where(self.keys[pos] == uniq, pos, torch.full_like(pos, P))
        ids[mask] = pos.to(torch.int32)[inverse]
        return ids

    def __len__(self) -> int:
        return len(self._words)

    @property
    def device(self) -> torch.device:
        """Where the batches live (the CPU until `to`)."""
        return self._words[0][1].device if self._words else torch.device("cpu")

    def to(self, device) -> PairIndex:
        """Move every batch to `device` once (so EM iterations copy nothing); an index with
        a disk cache stays on the CPU (its batches are read back one at a time). Returns
        self. Memory on `device`: 4 bytes per cell plus the padded words."""
        device = torch.device(device)
        if self._dir is not None or device == self.device:
            return self
        self._words = [tuple(x.to(device) for x in w) for w in self._words]
        self._ids = [x.to(device) for x in self._ids]
        return self

    def batch(self, k: int) -> Batch:
        """Batch k (pair ids read back from the disk cache when there is one). O(B I J)."""
        rows, s, t, sl, tl = self._words[k]
        ids = self._ids[k]
        if isinstance(ids, str):
            ids = torch.from_numpy(np.load(ids))
        return Batch(rows, s, t, sl, tl, ids)

    def __iter__(self) -> Iterator[Batch]:
        for k in range(len(self)):
            yield self.batch(k)

    def cells(self, k: int) -> int:
        """Padded cells B * I * J of batch k."""
        _, s, t, _, _ = self._words[k]
        return s.numel() * t.shape[1]


def build_index(
    pairs: Iterable[tuple[Sequence[str], Sequence[str]]],
    src_ids: WordIds,
    tgt_ids: WordIds,
    *,
    cells: int = DEFAULT_CELLS,
    keys: torch.Tensor | None = None,
    cache_dir: str | None = None,
) -> PairIndex:
    """N token pairs -> PairIndex of ceil-ish(N cells / `cells`) batches (see `PairIndex`).

    Encodes the pairs as they stream in (ids added to `src_ids`/`tgt_ids` unless frozen;
    frozen: unseen words -> unknown). `keys` fixes the pair table (a loaded model's).
    Memory: 4 bytes per token plus the index; the token strings are not kept.
    """
    src, tgt = [], []
    for s, t in pairs:
        src.append(src_ids.encode(s))
        tgt.append(tgt_ids.encode(t))
    return PairIndex(src, tgt, n_src_words=len(src_ids), n_tgt_words=len(tgt_ids),
                     keys=keys, cells=cells, cache_dir=cache_dir)
