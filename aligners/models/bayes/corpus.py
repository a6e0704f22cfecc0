"""The encoded bitext of the Bayesian aligner: flat token arrays and per-sentence index tables.

Sentence k has I_k source and J_k target tokens; its I_k * J_k cells (source-major:
cell = i * J_k + j) start at `cell_off[k]`, and `pair[cell_off[k] + i * J_k + j]` is the id of
the co-occurring word pair (s_i, t_j) in the sorted table `keys` (s * n_tgt_words + t).
Both sampling directions and the link marginals use this one layout (Östling & Tiedemann
2016, section 4: per-sentence index tables into the co-occurrence table, no hash map).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from aligners.data.heap import release_free_heap
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError

__all__ = ["EncodedBitext", "encode_bitext"]

_CHUNK_CELLS = 4_000_000  # cells per chunk while building the pair table (bounds peak memory)


@dataclass
class EncodedBitext:
    """Flat int32 token ids with int64 offsets (K + 1,); pair (cells,) int32; keys (P,) int64.

    Memory: 4 bytes per token and per cell (sum_k I_k * J_k), 8 per distinct pair.
    """

    src: np.ndarray
    src_off: np.ndarray
    tgt: np.ndarray
    tgt_off: np.ndarray
    cell_off: np.ndarray
    pair: np.ndarray
    keys: np.ndarray
    n_src_words: int
    n_tgt_words: int

    @property
    def n_sentences(self) -> int:
        return len(self.src_off) - 1

    def lengths(self, k: int) -> tuple[int, int]:
        """(I, J) of sentence k."""
        return (int(self.src_off[k + 1] - self.src_off[k]),
                int(self.tgt_off[k + 1] - self.tgt_off[k]))


@njit(nogil=True, cache=True)
def _fill_keys(src, src_off, tgt, tgt_off, cell_off, n_tgt_words, k0, k1, out):
    base = cell_off[k0]
    for k in range(k0, k1):
        i0, i1 = src_off[k], src_off[k + 1]
        j0, j1 = tgt_off[k], tgt_off[k + 1]
        c = cell_off[k] - base
        for i in range(i0, i1):
            s = np.int64(src[i]) * n_tgt_words
            for j in range(j0, j1):
                out[c] = s + tgt[j]
                c += 1


def _chunks(cell_off: np.ndarray):
    """Sentence ranges [k0, k1) of at most _CHUNK_CELLS cells (or one longer sentence)."""
    n = len(cell_off) - 1
    k0 = 0
    while k0 < n:
        k1 = int(np.searchsorted(cell_off, cell_off[k0] + _CHUNK_CELLS, side="right")) - 1
        k1 = min(max(k1, k0 + 1), n)
        yield k0, k1
        k0 = k1


def _flat(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in seqs], out=off[1:])
    flat = np.concatenate(seqs).astype(np.int32) if seqs else np.zeros(0, np.int32)
    return flat, off


def encode_bitext(pairs: Iterable[tuple[Sequence[str], Sequence[str]]], src_ids: WordIds,
                  tgt_ids: WordIds) -> EncodedBitext:
    """Encode token pairs (new words are added to the vocabularies) and build the pair table.

    Cost O(total cells) time (two passes in chunks); the largest temporary is one chunk's
    int64 keys; freed heap pages go back to the OS before returning (release_free_heap).
    Raises AlignersInputError for an empty corpus.
    """
    src_seqs, tgt_seqs = [], []
    for s, t in pairs:
        src_seqs.append(src_ids.encode(s))
        tgt_seqs.append(tgt_ids.encode(t))
    if not src_seqs:
        raise AlignersInputError("the bitext is empty: expected at least one sentence pair")
    src, src_off = _flat(src_seqs)
    tgt, tgt_off = _flat(tgt_seqs)
    del src_seqs, tgt_seqs
    if len(src) == 0 or len(tgt) == 0:
        raise AlignersInputError("every sentence pair has an empty side: nothing to align")
    cells = np.diff(src_off) * np.diff(tgt_off)
    cell_off = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum(cells, out=cell_off[1:])
    vt = np.int64(len(tgt_ids))
    keys = np.zeros(0, np.int64)
    for k0, k1 in _chunks(cell_off):
        buf = np.empty(int(cell_off[k1] - cell_off[k0]), np.int64)
        _fill_keys(src, src_off, tgt, tgt_off, cell_off, vt, k0, k1, buf)
        keys = np.union1d(keys, buf)
    pair = np.empty(int(cell_off[-1]), np.int32)
    for k0, k1 in _chunks(cell_off):
        buf = np.empty(int(cell_off[k1] - cell_off[k0]), np.int64)
        _fill_keys(src, src_off, tgt, tgt_off, cell_off, vt, k0, k1, buf)
        pair[cell_off[k0]:cell_off[k1]] = np.searchsorted(keys, buf)
    del buf
    release_free_heap()
    return EncodedBitext(src, src_off, tgt, tgt_off, cell_off, pair, keys,
                         len(src_ids), len(tgt_ids))
