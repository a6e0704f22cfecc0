"""Steps 1 and 2 of building a `PhrasalAligner` (Bansal et al. 2011, sec. 5; `init.py` runs
the steps): the word HMM's Viterbi alignments (`word_viterbi`), then the phrase lists of
both languages mined from them (`mine_phrase_lists`). Cost: one Viterbi pass, then one
mining and one counting pass over the bitext per language (O(cells) each).
"""

from __future__ import annotations

import numpy as np
import torch

from aligners.data.bitext import PairIndex
from aligners.lattices._alignment_hmm_viterbi_kernel import alignment_hmm_viterbi_cpu
from aligners.models.gappy_hsmm._init_kernel import gappy_occurrences, hash_table, key_positions
from aligners.models.gappy_hsmm._mine_kernel import mine_candidates
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.models.gappy_hsmm.phrase_lists import (
    PhraseList,
    phrase_hashes,
    rank_phrases,
    span_hashes,
)
from aligners.models.gappy_hsmm.routing import take
from aligners.models.hmm.directional import _jump_scores
from aligners.semirings import log_or_zero

__all__ = ["word_viterbi", "mine_phrase_lists"]


def _hmm_viterbi_cpu(word_model, batch, log_t: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """`word_model.viterbi(batch)` of an Och-Ney word HMM on CPU through the numba Viterbi
    (`alignment_hmm_viterbi_cpu`, identical paths). `log_t`: the forward and backward
    tables' `log_or_zero`, gathered straight into the recursion's (B, O, S) word log
    potentials (the log of the gathered probabilities, the same values elementwise, without
    a (B, I, J) log pass and transposed copy per batch)."""
    ids = batch.pair_ids
    c = word_model.config
    out = []
    for lw_ids, null, jw, sl, tl, lt in (
            (ids.transpose(1, 2), take(word_model.null_tgt, batch.tgt), word_model.jump_fwd,
             batch.src_lengths, batch.tgt_lengths, log_t[0]),
            (ids, take(word_model.null_src, batch.src), word_model.jump_bwd,
             batch.tgt_lengths, batch.src_lengths, log_t[1])):
        log_links = take(lt, lw_ids)  # (B, O, S)
        I = log_links.shape[2]
        scores = _jump_scores(jw, n_src=I, dtype=log_links.dtype)
        path = alignment_hmm_viterbi_cpu(None, null, scores, src_lengths=sl, tgt_lengths=tl,
                                         p0=c.p0, log_links=log_links).states
        jvalid = torch.arange(path.shape[1])[None, :] < tl[:, None]
        out.append(torch.where((path < I) & jvalid & (path >= 0), path,
                               torch.full_like(path, -1)))
    return out[0], out[1]


def word_viterbi(word_model, index: PairIndex) -> list:
    """Per batch (forward (B,J), backward (B,I)) word-HMM Viterbi alignments (-1 = NULL).
    An Och-Ney word HMM on CPU runs the numba Viterbi (same paths); else `.viterbi`."""
    out = []
    fast = (word_model.keys.device.type == "cpu" and word_model.stage == "hmm"
            and word_model.config.lattice == "och_ney")
    with torch.no_grad():
        log_t = ((log_or_zero(word_model.t_fwd), log_or_zero(word_model.t_bwd)) if fast
                 else None)
        for k in range(len(index)):
            bt = index.batch(k)
            f, b = _hmm_viterbi_cpu(word_model, bt, log_t) if fast else word_model.viterbi(bt)
            out.append((f.cpu().int(), b.cpu().int()))
    return out


def _unique_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`torch.unique(x, dim=0, return_counts=True)` of non-negative rows x (M, n): each row
    packed into one int64 key (base max + 1, first word most significant, so the key order
    is the lexicographic row order), unique keys counted and unpacked. The same rows in
    the same order and counts, faster than unique_dim; falls back to it when a key could
    overflow (base^n >= 2^63)."""
    M, n = x.shape
    base = int(x.max()) + 1 if x.numel() else 1
    if M == 0 or int(x.min()) < 0 or base ** n >= 2 ** 63:
        return torch.unique(x, dim=0, return_counts=True)
    k = torch.zeros(M, dtype=torch.long)
    for c in range(n):
        k = k * base + x[:, c]
    u, counts = torch.unique(k, return_counts=True)
    rows = torch.empty(u.numel(), n, dtype=x.dtype)
    for c in range(n - 1, -1, -1):
        rows[:, c] = u % base
        u = u // base
    return rows, counts


def _count_rows(parts: dict, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """{length: [(M, length) word-id tensors]} -> (distinct phrases (N, width) -1 padded,
    their counts (N,) int64). One torch.unique per length (no per-instance Python)."""
    rows, counts = [], []
    for ln, ps in sorted(parts.items()):
        if not ps:
            continue
        u, c = _unique_rows(torch.cat(ps))
        rows.append(torch.cat([u, u.new_full((u.shape[0], width - ln), -1)], 1))
        counts.append(c)
    t = torch.cat(rows) if rows else torch.zeros(0, width, dtype=torch.long)
    return t, torch.cat(counts) if counts else torch.zeros(0, dtype=torch.long)


class _GappyCounter:
    """Occurrences of the gappy candidates (sorted keys (G,), w1 * V + w2) summed over
    batches: `add(words, lengths)` per batch, `counts` (G,) int64. The counts of
    `PhraseList.match_gappy` (pairs a < c - 1 of one sentence), by the numba kernel
    `_init_kernel.gappy_occurrences` without (B,N,N) temporaries: a hash table of the keys,
    first / last word filters."""

    def __init__(self, keys: torch.Tensor, V: int):
        k = np.ascontiguousarray(keys.numpy(), dtype=np.int64)
        self.keys, self.V = k, int(V)
        self.table = hash_table(k) if k.shape[0] else None
        self.first_ok = np.bincount(k // V, minlength=V) > 0  # (V,) bool
        self.last_ok = np.bincount(k % V, minlength=V) > 0
        self.counts = np.zeros(k.shape[0], dtype=np.int64)

    def add(self, words: torch.Tensor, lengths: torch.Tensor) -> None:
        if self.keys.shape[0]:
            gappy_occurrences(words, lengths, self.keys, self.table, self.first_ok,
                              self.last_ok, self.V, self.counts)


class _SpanCounter:
    """Occurrences of the contiguous candidates (rows (G, L) word ids, -1 padded, lengths
    >= 2) summed over batches: `add(words, lengths)` per batch, `counts` (G,) int64. Spans
    are identified by `phrase_lists.span_hashes` as in `PhraseList.match_spans` (whose
    bincount per batch it equals), looked up in a hash table (`_init_kernel`) instead of a
    binary search over the sorted candidate hashes."""

    def __init__(self, rows: torch.Tensor, max_len: int):
        lens = set((rows >= 0).sum(1).tolist())
        self.lengths = [ln for ln in range(2, max_len + 1) if ln in lens]
        self.keys = np.ascontiguousarray(phrase_hashes(rows, max_len).numpy())
        self.table = hash_table(self.keys) if self.keys.shape[0] else None
        self.counts = np.zeros(self.keys.shape[0], dtype=np.int64)

    def add(self, words: torch.Tensor, lengths: torch.Tensor) -> None:
        for ln in self.lengths:
            h, valid = span_hashes(words, lengths, length=ln)
            if h.numel():
                pos = key_positions(h.reshape(-1), valid.reshape(-1), self.keys, self.table)
                self.counts += np.bincount(pos[pos >= 0], minlength=self.counts.shape[0])


def mine_phrase_lists(index: PairIndex, vit: list, config: PhrasalConfig, *,
                      gappy_where: list | None = None):
    """(source PhraseList, target PhraseList, stats dict) from the Viterbi alignments.
    `gappy_where`: a list that receives per batch {"src": where, "tgt": where}, the gappy
    instances of `mine_candidates` (for `_init_counts`: no second mining pass)."""
    L = config.max_phrase_len
    V = {"src": index.n_src_words, "tgt": index.n_tgt_words}
    spans = {s: {ln: [] for ln in range(2, L + 1)} for s in ("src", "tgt")}
    gkeys = {s: [] for s in ("src", "tgt")}
    for k in range(len(index)):
        bt = index.batch(k)
        f, b = vit[k]
        where_k = {}
        for side, obs, al, ln in (("tgt", bt.tgt, f, bt.tgt_lengths),
                                  ("src", bt.src, b, bt.src_lengths)):
            contig, (gk, where_k[side]) = mine_candidates(obs, al.long(), ln, max_len=L,
                                                          n_words=V[side])
            for length, words in contig.items():
                spans[side][length].append(words)
            gkeys[side].append(gk)
        if gappy_where is not None:
            gappy_where.append(where_k)
    lists, stats = {}, {}
    for side in ("src", "tgt"):
        rows, counts = _count_rows(spans[side], L)
        spans[side] = None
        gu, gc = (torch.unique(torch.cat(gkeys[side]), return_counts=True) if gkeys[side]
                  else (torch.zeros(0, dtype=torch.long),) * 2)
        cand = PhraseList(rows, torch.stack([gu // V[side], gu % V[side]], 1), V[side], L)
        tot_c = _SpanCounter(rows, L)
        tot_g = _GappyCounter(gu, V[side])
        for k in range(len(index)):
            bt = index.batch(k)
            words, ln = (bt.src, bt.src_lengths) if side == "src" else (bt.tgt, bt.tgt_lengths)
            tot_c.add(words, ln)
            if config.gappy and cand.n_gappy:
                tot_g.add(words, ln)
        top_c = rank_phrases(rows, counts, tot_c.counts, top=config.n_contiguous,
                             min_count=config.min_count, discount=config.discount,
                             rule=config.rank)
        top_g = torch.zeros(0, 2, dtype=torch.long)
        if config.gappy:
            gd = config.discount if config.gappy_discount is None else config.gappy_discount
            top_g = rank_phrases(cand.gappy, gc, tot_g.counts, top=config.n_gappy,
                                 min_count=config.gappy_min_count, discount=gd,
                                 rule=config.gappy_rank or config.rank)
        lists[side] = PhraseList(top_c, top_g, V[side], L)
        stats[f"{side}_contiguous_candidates"] = cand.n_contiguous
        stats[f"{side}_gappy_candidates"] = cand.n_gappy
    return lists["src"], lists["tgt"], stats
