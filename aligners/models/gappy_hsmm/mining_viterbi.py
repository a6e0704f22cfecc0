"""The word HMM's Viterbi alignments that the phrasal model's phrase lists are mined from
(Bansal et al. 2011, sec. 5): per batch, both directions of a trained `WordAligner`.
Shapes: per batch forward (B, J) and backward (B, I) int32 state positions, -1 = NULL.
Cost: one Viterbi pass over the bitext, O(B J I^2) per batch.
"""

from __future__ import annotations

import torch

from aligners.data.bitext import PairIndex
from aligners.lattices._alignment_hmm_viterbi_kernel import alignment_hmm_viterbi_cpu
from aligners.models.gappy_hsmm.routing import take
from aligners.models.hmm.directional import _jump_scores
from aligners.semirings import log_or_zero

__all__ = ["word_viterbi"]


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
            f, b = (_hmm_viterbi_cpu(word_model, bt, log_t) if fast
                    else word_model.viterbi(bt))
            out.append((f.cpu().int(), b.cpu().int()))
    return out
