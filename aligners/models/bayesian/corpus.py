"""The encoded bitext of the Bayesian aligner: flat token arrays and per-sentence index tables.

Sentence k has I_k source and J_k target tokens; its I_k * J_k cells (source-major:
cell = i * J_k + j) start at `cell_off[k]`, and `pair[cell_off[k] + i * J_k + j]` is the id of
the co-occurring word pair (s_i, t_j) in the table `keys` (s * n_tgt_words + t), numbered
by decreasing number of cells (ties in order of first occurrence): the pairs of two cells or
more first (`n_shared` of them), then the single-cell pairs.
Both sampling directions and the link marginals use this one layout (Östling & Tiedemann
2016, section 4: per-sentence index tables into the co-occurrence table, no hash map).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from aligners.data._pairtable import _encode_stream, spans
from aligners.data.heap import release_free_heap
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.models.bayesian.jit import wait_compile_child
from aligners.models.bayesian.pair_table import SINGLE, _fold, _keys_from_ids, build_pairs

__all__ = ["EncodedBitext", "SINGLE", "encode_bitext"]



@dataclass
class EncodedBitext:
    """Flat int32 token ids with int64 offsets (K + 1,); per-cell pair ids (cells,) split into
    pair_lo uint16 + pair_hi uint8 (uint16 from 2^24 pairs on); keys (P,) int64.

    Pair ids are numbered by decreasing number of cells; the first n_shared occur in two
    cells or more, the others in one cell each. Memory: 4 bytes per token, 3 per cell
    (sum_k I_k * J_k), 8 per distinct pair. keys may be set to None while sampling and
    rebuilt from the pair ids (`restore_keys`, which frees the ids).
    """

    src: np.ndarray
    src_off: np.ndarray
    tgt: np.ndarray
    tgt_off: np.ndarray
    cell_off: np.ndarray
    pair_lo: np.ndarray
    pair_hi: np.ndarray
    keys: np.ndarray | None
    n_src_words: int
    n_tgt_words: int
    n_pairs: int
    n_shared: int = -1  # ids from here on occur in one cell each (-1: unknown)
    single_off: np.ndarray | None = None  # (K + 1,) folded single cells before sentence k

    def fold_singles(self) -> bool:
        """Give every cell of a single-cell pair the one id SINGLE, so that the ids fit 3
        bytes per cell while fewer than SINGLE pairs are shared (the full Hansards: 32.8M
        pairs, 15.2M shared: 4 -> 3 bytes per cell, 658 MB less). A folded cell's own id
        stays known: single-cell pairs are numbered from n_shared in cell order, so it is
        n_shared + single_off[k] + its rank among sentence k's folded cells
        (`counts.single_pair_ids`, `restore_keys`). Only for readers that never read a
        single-cell pair's count: the exact sampler without a prior. 2-byte high ids are
        narrowed inside their own buffer, whose second half then goes back to the OS
        (`_drop_pages`): folding allocates no cell-sized array. Returns whether the ids are
        folded. Cost O(cells)."""
        if self.single_off is not None:
            return True
        if not 0 < self.n_shared < SINGLE:  # (none shared: the sampler keeps id 0's count)
            return False
        n = len(self.pair_lo)
        hi = self.pair_hi
        out = hi if hi.itemsize == 1 else hi.view(np.uint8)[:n]
        self.single_off = np.zeros(self.n_sentences + 1, np.int64)
        _fold(self.pair_lo, hi, out, np.int64(self.n_shared), self.cell_off, self.single_off)
        if hi.itemsize > 1:
            _drop_pages(hi.view(np.uint8)[n:])
        self.pair_hi = out
        return True

    def restore_keys(self) -> None:
        """Rebuild keys (None while sampling: 8 bytes per pair not read there) from the pair
        ids, then free the ids (3 bytes per cell; not needed to decode). Cost O(cells).

        The ids are read in about 64 blocks of sentences and each block's memory pages go
        back to the OS once read (`_drop_pages`): the keys never add to the ids at the peak.
        """
        if self.keys is None:
            self.keys = np.empty(self.n_pairs, np.int64)
            for k0, k1 in spans(self.cell_off, max(1, int(self.cell_off[-1]) // 64)):
                c0, c1 = int(self.cell_off[k0]), int(self.cell_off[k1])
                lo, hi = self.pair_lo[c0:c1], self.pair_hi[c0:c1]
                folded = self.single_off is not None
                _keys_from_ids(self.src, self.src_off[k0:k1 + 1], self.tgt,
                               self.tgt_off[k0:k1 + 1], np.int64(self.n_tgt_words), lo, hi,
                               self.keys, np.int64(self.n_shared if folded else -1),
                               np.int64(self.single_off[k0] if folded else 0))
                _drop_pages(lo)
                _drop_pages(hi)
        self.pair_lo = np.zeros(0, np.uint16)
        self.pair_hi = np.zeros(0, self.pair_hi.dtype)
        self.single_off = None

    @property
    def n_sentences(self) -> int:
        return len(self.src_off) - 1


def _drop_pages(view: np.ndarray) -> bool:
    """Give the whole memory pages inside `view` (a contiguous array slice that will not be
    read again) back to the OS (Linux madvise MADV_DONTNEED: they read as zeros after);
    False where unavailable (the memory is then freed with the array only)."""
    page = mmap.PAGESIZE
    start = -(-view.ctypes.data // page) * page
    stop = (view.ctypes.data + view.nbytes) // page * page
    if stop <= start:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(stop - start), 4) == 0
    except (OSError, AttributeError):
        return False


def encode_bitext(pairs: Iterable[tuple[Sequence[str], Sequence[str]]], src_ids: WordIds,
                  tgt_ids: WordIds, *, threads: int = 2) -> EncodedBitext:
    """Encode token pairs (new words are added to the vocabularies) and build the pair table.

    Cost O(total cells + P log P) (`pair_table.build_pairs`); the tokens are encoded as the
    word HMM's index encodes them (`aligners.data._pairtable._encode_stream`: flat int32
    arrays, no per-sentence objects); freed heap pages go back to the OS before returning.
    Raises AlignersInputError for an empty corpus.
    """
    (src, src_off), (tgt, tgt_off) = _encode_stream(pairs, (src_ids, tgt_ids))
    if len(src_off) == 1:
        raise AlignersInputError("the bitext is empty: expected at least one sentence pair")
    wait_compile_child()  # (jit.py: kernels compiled in a child load from the cache)
    if len(src) == 0 or len(tgt) == 0:
        raise AlignersInputError("every sentence pair has an empty side: nothing to align")
    cells = np.diff(src_off) * np.diff(tgt_off)
    cell_off = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum(cells, out=cell_off[1:])
    lo, hi, keys, n_shared = build_pairs(src, src_off, tgt, tgt_off, cell_off, len(src_ids),
                                         len(tgt_ids), threads)
    release_free_heap()
    return EncodedBitext(src, src_off, tgt, tgt_off, cell_off, lo, hi, keys,
                         len(src_ids), len(tgt_ids), len(keys), n_shared)
