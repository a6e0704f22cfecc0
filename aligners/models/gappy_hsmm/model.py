"""Phrasal / gappy hidden semi-Markov word aligner, both directions (Bansal, Quirk & Moore
2011), trained by EM with agreement.

Forward: source states generate the target; backward: target states generate the source.
Per direction the states are words, Och-Ney NULLs, and the listed contiguous / gappy
phrases of the state sentence (`aligners.models.gappy_hsmm.phrase_lists`); a word state emits
one target word or a listed contiguous target phrase, a phrase state one word (minimal
1-k / k-1 links). Emission tables are sparse over co-occurring (source unit, target unit)
pairs: keys = the word aligner's pair keys `s * Vt + t` (slots 0..P-1, slot P = unseen) then
the phrase keys `u_s * Ut + u_t` (slots P+1..P+Q). Transitions: the word HMM's jump weights
s(w) (kept fixed), p(a | prev) = (1 - p0) s(first(a) - last(prev)) eta^N(a) / Z(last(prev)),
NULL with p0 (Och-Ney); lambda^(l-1) per emitted target phrase of length l (p_f(K|J) moved
into the product; its normaliser is constant per pair and omitted). The DP is
`aligners.lattices.phrasal_hsmm` in its sparse form (`phrasal_hsmm_sparse`: a word state's
multi-word segments only at listed spans). Per batch the fixed parts (routing split, slots,
jump normalisers, agreement maps) are built once (`prepare`, `prepared.py`) and reused by
every EM iteration; only the tables change.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch
from torch import nn

from aligners.data.bitext import Batch
from aligners.lattices.phrasal_hsmm_sparse import (
    SparsePhrasalPotentials,
    phrasal_hsmm_sparse_posteriors,
)
from aligners.models._scatter import scatter_add2_, scatter_add_
from aligners.models.gappy_hsmm._counts_kernel import gather2, normalise_counts
from aligners.models.gappy_hsmm._init_kernel import hash_table, key_positions
from aligners.models.gappy_hsmm.agreement import sparse_agreement_counts, sparse_link_posteriors
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.models.gappy_hsmm.phrase_lists import PhraseList
from aligners.models.gappy_hsmm.prepared import (
    DirectionConst,
    PreparedBatch,
    jump_potentials,
    prepare_batch,
)
from aligners.models.gappy_hsmm.routing import take, take_rows, word_row_counts, word_row_posteriors

__all__ = ["PhrasalAligner"]

_TINY = 1e-20


class PhrasalAligner(nn.Module):
    """Buffers: word_keys (P,), phrase_keys (Q,) sorted; t_fwd, t_bwd (P+1+Q,) p(tgt unit |
    src unit), p(src unit | tgt unit); null_tgt (Vt,), null_src (Vs,); jump_fwd, jump_bwd
    (2K+1,); the two phrase lists. Memory O(P + Q + V). No Lightning in here."""

    def __init__(self, *, word_keys, phrase_keys, n_src_words, n_tgt_words, src_list: PhraseList,
                 tgt_list: PhraseList, jump_fwd, jump_bwd, config: PhrasalConfig | None = None):
        super().__init__()
        self.config = config or PhrasalConfig()
        self.n_src_words, self.n_tgt_words = n_src_words, n_tgt_words
        self.src_list, self.tgt_list = src_list, tgt_list
        P, Q = word_keys.numel(), phrase_keys.numel()
        self.register_buffer("word_keys", word_keys.long())
        self.register_buffer("phrase_keys", phrase_keys.long())
        self.register_buffer("t_fwd", torch.full((P + 1 + Q,), _TINY))
        self.register_buffer("t_bwd", torch.full((P + 1 + Q,), _TINY))
        self.register_buffer("null_tgt", torch.full((n_tgt_words,), 1.0 / n_tgt_words))
        self.register_buffer("null_src", torch.full((n_src_words,), 1.0 / n_src_words))
        self.register_buffer("jump_fwd", jump_fwd.clone().float())
        self.register_buffer("jump_bwd", jump_bwd.clone().float())
        self.register_buffer("iteration", torch.zeros((), dtype=torch.long))
        self.reset_counts()

    @property
    def keys(self) -> torch.Tensor:  # the word pair table of `PairIndex` batches
        return self.word_keys

    @property
    def n_tgt_units(self) -> int:
        return self.tgt_list.n_units

    # ------------------------------------------------------------------ lookups
    def phrase_ids(self, src_unit: torch.Tensor, tgt_unit: torch.Tensor) -> torch.Tensor:
        """Table slots of (source unit, target unit) phrase keys (any shape); unseen or
        negative units -> slot P (the floor). Cost O(n log Q)."""
        P, Q = self.word_keys.numel(), self.phrase_keys.numel()
        key = src_unit.long() * self.n_tgt_units + tgt_unit.long()
        ok = (src_unit >= 0) & (tgt_unit >= 0)
        if Q == 0:
            return torch.full_like(key, P)
        if key.device.type == "cpu":  # hash-table look-up: the same slots, O(1) per key
            pos = torch.from_numpy(key_positions(key.reshape(-1), ok.reshape(-1),
                                                 *self._phrase_hash()))
            return torch.where(pos >= 0, pos + P + 1, torch.full_like(pos, P)).view(key.shape)
        out = torch.full((key.numel(),), P, dtype=torch.long, device=key.device)
        idx = ok.reshape(-1).nonzero()[:, 0]  # only valid units are searched (padding is not)
        k = key.reshape(-1)[idx]
        pos = torch.searchsorted(self.phrase_keys, k).clamp(max=Q - 1)
        out[idx] = torch.where(self.phrase_keys[pos] == k, pos + P + 1, torch.full_like(pos, P))
        return out.view(key.shape)

    def _phrase_hash(self) -> tuple:
        """(phrase keys as int64 numpy, `_init_kernel.hash_table` of them) (CPU; cached as
        `_cached`). Memory ~ 4 Q int64."""
        def build():
            keys = np.ascontiguousarray(self.phrase_keys.numpy(), dtype=np.int64)
            return keys, hash_table(keys)

        return self._cached("hash", (self.phrase_keys,), build)

    def _cached(self, name, tensors: tuple, build):
        """`build()`, computed once per objects and versions of `tensors` (the M-step
        replaces the tables; an in-place change such as load_state_dict bumps the version);
        only weak references to them kept; the stale value dropped before the rebuild."""
        cache = self.__dict__.setdefault("_caches", {})
        hit = cache.get(name)
        if hit is None or any(r() is not t or v != t._version
                              for (r, v), t in zip(hit[0], tensors)):
            cache.pop(name, None)
            hit = cache[name] = ([(weakref.ref(t), t._version) for t in tensors], build())
        return hit[1]

    # ------------------------------------------------------------------ potentials
    prepare = prepare_batch  # model.prepare(batch, lay) -> PreparedBatch

    def _potentials(self, d: DirectionConst, word: torch.Tensor) -> SparsePhrasalPotentials:
        """Sparse potentials of one direction of the phrase rows from the current tables:
        word (B,O,S) (the word-slot log potentials, gathered by `_sparse`), listed long
        segments (M,S), null (B,O), phrase (B,O,P)."""
        table = self.pair_tables(log=True)[:, 0 if d.forward else 1]
        null = self.null_tgt if d.forward else self.null_src  # its log, cached as `_cached`
        null_t = self._cached(("log", d.forward), (null,), lambda: torch.log(null))
        return SparsePhrasalPotentials(
            word, d.seg_item, d.seg_end, d.seg_len,
            take(table, d.ids_s) + d.seg_lam, take(null_t, d.obs), take(table, d.ids_p),
            *jump_potentials(self, d), d.null_init, d.null_stay, d.phrase_weight, d.first,
            d.last)

    def pair_tables(self, *, log: bool = False) -> torch.Tensor:
        """(P+1+Q, 2) t_fwd and t_bwd interleaved (log: their logs, each `torch.log` of its
        own table, so the same values as gathering then taking the log; cached as
        `_cached`); gathered by `gather2`, one cache line for both directions' slot. Memory
        2 (P+1+Q) floats per form."""
        tabs = (self.t_fwd, self.t_bwd)
        return self._cached(("pair", log), tabs, lambda: torch.stack(
            [torch.log(t) for t in tabs] if log else tabs, 1))

    def clear_caches(self) -> None:
        """Drop the cached log tables, interleaved pair tables and phrase hash (rebuilt on
        next use): frees 4 (P+1+Q) floats and more once a model is trained and evaluated."""
        self.__dict__.pop("_caches", None)

    def _sparse(self, prep: PreparedBatch, pbatch: Batch, *, viterbi: bool = False):
        """Both directions' sparse posteriors (or Viterbi indicators) of the phrase rows
        `pbatch` (= prep.phrase_batch())."""
        wb, wf = gather2(self.pair_tables(log=True), pbatch.pair_ids)[::-1]
        return [phrasal_hsmm_sparse_posteriors(
            self._potentials(d, w), max_len=self.config.max_phrase_len,
            src_lengths=d.state_lengths, tgt_lengths=d.obs_lengths, viterbi=viterbi)
            for d, w in ((prep.fwd, wf.transpose(1, 2)), (prep.bwd, wb))]  # w (B,O,S)

    # ------------------------------------------------------------------ E-step
    def link_posteriors(self, prep: PreparedBatch, *, viterbi: bool = False):
        """(forward, backward) link posteriors (B, I, J) of every source-target word link
        of the batch `prep` (`self.prepare(batch, lay)`; rows without a phrase state run
        the word HMM lattice, `routing`): a phrasal edge counts for each of its word links,
        a gappy one for its two ends."""
        batch = prep.batch
        if prep.word_rows is None:
            pf, pb = self._sparse(prep, batch, viterbi=viterbi)
            return sparse_link_posteriors(pf, pb, prep.fwd, prep.bwd)
        out = [torch.zeros(batch.pair_ids.shape, dtype=self.t_fwd.dtype,
                           device=batch.src.device) for _ in range(2)]
        wb = take_rows(batch, prep.word_rows)
        wp = word_row_posteriors(self, wb, viterbi=viterbi)
        parts = [(prep.word_rows, wb, (wp.links_fwd, wp.links_bwd))]
        pbatch = prep.phrase_batch()
        if pbatch is not None:
            pf, pb = self._sparse(prep, pbatch, viterbi=viterbi)
            parts.append((prep.phrase_rows, pbatch,
                          sparse_link_posteriors(pf, pb, prep.fwd, prep.bwd)))
        for rows, b, links in parts:
            I, J = b.src.shape[1], b.tgt.shape[1]
            for o, x in zip(out, links):
                o[rows, :I, :J] = x
        return tuple(out)

    # ------------------------------------------------------------------ EM
    def reset_counts(self) -> None:
        n, dev, dt = self.t_fwd.numel(), self.t_fwd.device, self.t_fwd.dtype
        # both directions' counts interleaved (one cache line per slot in the scatters)
        self.c_lex = torch.zeros(n, 2, dtype=dt, device=dev)
        self.c_fwd, self.c_bwd = self.c_lex[:, 0], self.c_lex[:, 1]
        self.c_null_tgt = torch.zeros(self.n_tgt_words, dtype=dt, device=dev)
        self.c_null_src = torch.zeros(self.n_src_words, dtype=dt, device=dev)
        self.c_loglik = torch.zeros(2, dtype=torch.float64, device=dev)

    def accumulate(self, prep: PreparedBatch) -> None:
        """E-step of the batch `prep` (`self.prepare(batch, lay)`; with agreement when
        configured) into the count buffers: rows without a phrase state run the word HMM
        lattice (`routing`; the same counts), the others the phrasal lattice."""
        if prep.word_rows is not None:  # through the word HMM lattice
            wb = take_rows(prep.batch, prep.word_rows)
            post = word_row_posteriors(self, wb)
            (qf, qb), nf, nb = word_row_counts(post, wb, agreement=self.config.agreement)
            ids = wb.pair_ids.reshape(-1)  # int32: same sums, faster than int64
            scatter_add2_(self.c_lex, ids, qf.to(self.c_lex.dtype), qb.to(self.c_lex.dtype))
            scatter_add_(self.c_null_tgt, wb.tgt, nf.to(self.c_null_tgt.dtype))
            scatter_add_(self.c_null_src, wb.src, nb.to(self.c_null_src.dtype))
            self.c_loglik += torch.stack([post.loglik_fwd.sum(), post.loglik_bwd.sum()]).double()
        pb_ = prep.phrase_batch()
        if pb_ is None:
            return
        pf, pb = self._sparse(prep, pb_)
        qf, qb = sparse_agreement_counts(pf, pb, prep.fwd, prep.bwd,
                                         agreement=self.config.agreement)
        for cnt, d, q, ids in ((self.c_fwd, prep.fwd, qf, pb_.pair_ids.transpose(1, 2)),
                               (self.c_bwd, prep.bwd, qb, pb_.pair_ids)):
            scatter_add_(cnt, ids, q.word[0].to(cnt.dtype))  # word slots (B,O,S)
            scatter_add_(cnt, d.ids_s, q.word[1].to(cnt.dtype))
            scatter_add_(cnt, d.ids_p, q.phrase.to(cnt.dtype))
        scatter_add_(self.c_null_tgt, pb_.tgt, qf.null.to(self.c_null_tgt.dtype))
        scatter_add_(self.c_null_src, pb_.src, qb.null.to(self.c_null_src.dtype))
        self.c_loglik += torch.stack([pf.log_likelihood.sum(), pb.log_likelihood.sum()]).double()

    def givens(self, *, forward: bool) -> torch.Tensor:
        """(P+1+Q,) conditioning unit of every slot (source unit forward, target backward)."""
        Vt, Ut = self.n_tgt_words, self.n_tgt_units
        if forward:
            w, p = self.word_keys // Vt, self.phrase_keys // Ut
        else:
            w, p = self.word_keys % Vt, self.phrase_keys % Ut
        return torch.cat([w, w.new_zeros(1), p])

    def normalise(self, counts: torch.Tensor, *, forward: bool) -> torch.Tensor:
        """Conditional table from counts (P+1+Q,); slot P and empty rows get the floor."""
        n = self.src_list.n_units if forward else self.tgt_list.n_units
        fast = normalise_counts(counts, self.word_keys, self.phrase_keys, self.n_tgt_words,
                                self.n_tgt_units, n, _TINY, forward=forward)
        if fast is not None:  # CPU: the same values in two passes, no givens index
            return fast
        g = self.givens(forward=forward)
        tot = torch.zeros(n, dtype=counts.dtype, device=counts.device).index_add_(0, g, counts)
        den = tot[g]
        out = torch.where(den > 0, counts / den.clamp_min(torch.finfo(den.dtype).tiny),
                          torch.zeros((), dtype=counts.dtype, device=counts.device))
        out[self.word_keys.numel()] = _TINY
        return out.clamp_min(_TINY)

    def m_step(self) -> torch.Tensor:
        """New tables from the counts; returns the E-step log-likelihoods (2,)."""
        self.t_fwd = self.normalise(self.c_fwd, forward=True)
        self.t_bwd = self.normalise(self.c_bwd, forward=False)
        self.null_tgt = (self.c_null_tgt / self.c_null_tgt.sum().clamp_min(_TINY)).clamp_min(_TINY)
        self.null_src = (self.c_null_src / self.c_null_src.sum().clamp_min(_TINY)).clamp_min(_TINY)
        ll = self.c_loglik.clone()
        self.iteration += 1
        self.reset_counts()
        return ll
