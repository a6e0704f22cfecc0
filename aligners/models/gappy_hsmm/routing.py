"""Routing a batch between the word HMM and the phrasal lattice (issue 10: speed).

Shapes: batch (B, I) / (B, J), `Layout` of the batch; a row is a "phrase row" when one of
its spans is a listed phrase (a phrase state of either direction; a listed contiguous span
on one side is also a phrase state of the other direction, and is what enables
multi-word segments). A row that is not is exactly the word HMM: its phrasal lattice has
only word and NULL states emitting one word each, jumps (1 - p0) s(w) / sum s (eta cancels),
NULL p0 (Och-Ney), the same emission tables' word slots; and its agreement counts reduce
to the word aligner's q = p_f * p_b. Such rows run through the explicit scaled
forward-backward of `aligners.lattices.alignment_hmm` (O(B J I^2) as (B,I)x(I,I) GEMMs);
only phrase rows run `aligners.lattices.phrasal_hsmm` (tested equal to 1e-6 on word rows).
Cost of the routing itself: O(B (I + J) P) for the row masks and the row gathers.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from aligners.data.bitext import Batch
from aligners.lattices.alignment_hmm import alignment_hmm_posteriors, alignment_hmm_viterbi
from aligners.models.gappy_hsmm._counts_kernel import gather2
from aligners.models.hmm.directional import _jump_scores

__all__ = ["WordRowPosteriors", "take", "phrase_rows", "take_rows", "take_layout",
           "word_row_posteriors", "word_row_counts"]


class WordRowPosteriors(NamedTuple):
    """Both directions on word rows: log_likelihood (B,) each; links_fwd, links_bwd
    (B, I, J) link posteriors (0/1 under Viterbi); null_fwd (B, J), null_bwd (B, I)."""

    loglik_fwd: torch.Tensor
    loglik_bwd: torch.Tensor
    links_fwd: torch.Tensor
    null_fwd: torch.Tensor
    links_bwd: torch.Tensor
    null_bwd: torch.Tensor


def take(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """table[ids] (any shape) by one index_select (CPU: about 10x faster than advanced
    indexing for large index tensors; the same values)."""
    return table.index_select(0, ids.reshape(-1)).view(ids.shape)


def phrase_rows(lay) -> torch.Tensor:
    """(B,) bool: rows with at least one phrase state in either direction. O(B P)."""
    return (lay.ph_fwd[0] >= 0).any(1) | (lay.ph_bwd[0] >= 0).any(1)


def take_rows(batch: Batch, rows: torch.Tensor) -> Batch:
    """The sub-batch of `rows` (long (R,)), trimmed to its own longest sentences. O(R I J)."""
    sl, tl = batch.src_lengths[rows], batch.tgt_lengths[rows]
    I, J = int(sl.max()), int(tl.max())
    return Batch(batch.rows[rows], batch.src[rows, :I], batch.tgt[rows, :J], sl, tl,
                 batch.pair_ids[rows, :I, :J])


def take_layout(lay, rows: torch.Tensor, I: int, J: int):
    """The `Layout` of `take_rows(batch, rows)` (same phrase columns, trimmed). O(R (I+J) L)."""
    def ph(t):
        first = t[0][rows]
        P = int((first >= 0).sum(1).max()) if first.numel() else 0  # columns are packed left
        return tuple(x[rows, :P] for x in t)

    return type(lay)(lay.span_src[rows, :I], lay.span_tgt[rows, :J], ph(lay.ph_fwd),
                     ph(lay.ph_bwd), lay.span_state_src[rows, :I], lay.span_state_tgt[rows, :J])


def _viterbi_links(link, null, scores, sl, ol, p0):
    """0/1 links (B,S,O) and NULL indicators (B,O) of the best alignment, and its score."""
    states, score = alignment_hmm_viterbi(link, null, scores, src_lengths=sl, tgt_lengths=ol,
                                          p0=p0)
    B, S, O = link.shape
    word = (states >= 0) & (states < S)
    links = torch.zeros(B, S, O, dtype=link.dtype, device=link.device)
    b, o = word.nonzero(as_tuple=True)
    links[b, states[b, o], o] = 1
    null = ((states >= S) & (torch.arange(O, device=link.device)[None, :] < ol[:, None]))
    return links, null.to(link.dtype), score


def word_row_posteriors(model, batch: Batch, *, viterbi: bool = False) -> WordRowPosteriors:
    """Both directions' posteriors (or Viterbi indicators) of word rows (no phrase state),
    in (B, I, J) orientation. Cost O(B J I^2 + B I J^2)."""
    p0 = model.config.p0
    out = []
    lf, lb = gather2(model.pair_tables(), batch.pair_ids)  # both directions' word slots
    for link, null, jump, sl, ol in (  # link (B,S,O) state x observation, null (B,O)
            (lf, take(model.null_tgt, batch.tgt), model.jump_fwd, batch.src_lengths,
             batch.tgt_lengths),
            (lb.transpose(1, 2), take(model.null_src, batch.src), model.jump_bwd,
             batch.tgt_lengths, batch.src_lengths)):
        scores = _jump_scores(jump, n_src=link.shape[1], dtype=link.dtype)
        if viterbi:
            lk, nu, ll = _viterbi_links(link, null, scores, sl, ol, p0)
        else:
            post = alignment_hmm_posteriors(link, null, scores, src_lengths=sl, tgt_lengths=ol,
                                            p0=p0, jump_counts=False)  # jumps fixed: unused
            ll, lk, nu = post.log_likelihood, post.link_posteriors, post.null_posteriors
        out.append((ll, lk, nu))
    (llf, lf, nf), (llb, lb, nb) = out
    return WordRowPosteriors(llf, llb, lf, nf, lb.transpose(1, 2), nb)


def word_row_counts(post: WordRowPosteriors, batch: Batch, *, agreement: bool):
    """(link counts (B,I,J) of both directions' word slots, NULL counts of the target words
    (B,J), NULL counts of the source words (B,I)): with agreement q = p_f * p_b and each
    word's NULL count 1 - sum q (as `aligners.models.gappy_hsmm.agreement`); else each
    direction's own (returned as a pair of link counts). O(B I J)."""
    if not agreement:
        return (post.links_fwd, post.links_bwd), post.null_fwd, post.null_bwd
    q = post.links_fwd * post.links_bwd
    dev = q.device
    jv = (torch.arange(q.shape[2], device=dev)[None, :] < batch.tgt_lengths[:, None]).to(q.dtype)
    iv = (torch.arange(q.shape[1], device=dev)[None, :] < batch.src_lengths[:, None]).to(q.dtype)
    return (q, q), (1 - q.sum(1)).clamp_min(0) * jv, (1 - q.sum(2)).clamp_min(0) * iv
