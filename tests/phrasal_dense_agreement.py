"""The phrasal agreement on the DENSE posterior form (word (B,O,L,S)): the form the E-step
used before the sparse one (`aligners.models.gappy_hsmm.agreement`), kept here as the oracle the
sparse functions are tested against bit for bit (tests/test_phrasal_model.py). Shapes:
forward posteriors word (B,J,L,I), phrase (B,J,Pf), null (B,J); backward word (B,I,L,J),
phrase (B,I,Pb), null (B,I); `lay` a `make_layout` phrase layout. Cost O(B I J (L + P)).
"""

import torch

from aligners.lattices.phrasal_hsmm_sparse import sparse_posteriors_to_dense
from aligners.models.gappy_hsmm._counts_kernel import gather2
from aligners.models.gappy_hsmm.agreement import EdgeCounts
from aligners.models.gappy_hsmm.prepared import PreparedBatch, _members, direction_const

__all__ = ["unrouted", "dense_posteriors", "agreement_counts", "link_posteriors"]


def unrouted(model, batch, lay):
    """`model.prepare(batch, lay)` without the routing: every row on the phrasal lattice
    (the oracle the routed rows are tested against)."""
    batch = batch.to(model.word_keys.device)
    return PreparedBatch(batch, None, None, *(direction_const(model, batch, lay, forward=f)
                                              for f in (True, False)))


def dense_posteriors(model, batch, lay, *, viterbi=False):
    """(forward, backward) dense segment posteriors (`PhrasalPosteriors`, word (B,O,L,S); or
    Viterbi indicators) of one batch, every row on the phrasal lattice (`model` a
    `PhrasalAligner`): the sparse E-step's posteriors made dense."""
    prep = unrouted(model, batch, lay)
    pb, L = prep.phrase_batch(), model.config.max_phrase_len
    wb, wf = gather2(model.pair_tables(log=True), pb.pair_ids)[::-1]
    return [sparse_posteriors_to_dense(p, model._potentials(d, w), L)
            for p, d, w in zip(model._sparse(prep, pb, viterbi=viterbi), (prep.fwd, prep.bwd),
                               (wf.transpose(1, 2), wb))]


def _onehot(pos, n, mask):
    """(B,P) positions -> (B,P,n) float one-hot, zero where ~mask."""
    ar = torch.arange(n, device=pos.device)
    return ((pos[..., None] == ar) & mask[..., None]).float()


def _gappy_ends(ph, n, dtype):
    first, last, _, gap = ph
    m = (first >= 0) & (gap > 0)
    return (_onehot(first, n, m) + _onehot(last, n, m)).to(dtype)


def _span_agreement(word, other_phrase, span_state):
    """word (B,O,L,S) posteriors of one direction; returns a copy whose segments of length
    > 1 are multiplied by the posterior of their mirror phrase state (other_phrase (B,S,P):
    the other direction's phrase posteriors over its observation positions S), computed only
    at the listed spans (span_state (B,O,L) >= 0; every other long segment has posterior 0)."""
    out = word.clone()
    out[:, :, 1:] = 0
    hb, hn, hl = (span_state >= 0).nonzero(as_tuple=True)
    if hb.numel():
        mirror = other_phrase.transpose(1, 2)[hb, span_state[hb, hn, hl]]  # (M, S)
        out[hb, hn, hl] = word[hb, hn, hl] * mirror
    return out


def _phrase_partner(ph, other_word, ww_other):
    """Mirror posterior (B,P,O) of each phrase state of one direction emitting observation
    o: contiguous -> the other direction's word o emitting that span (other_word (B,S,L,O)
    indexed [span end, span length-1]); gappy -> min of ww_other (B,S,O) at the two ends."""
    first, last, _, gap = ph
    B = first.shape[0]
    bidx = torch.arange(B, device=first.device)[:, None]
    f, la = first.clamp_min(0), last.clamp_min(0)
    ln = (la - f).clamp(0, other_word.shape[2] - 1)
    contig = other_word[bidx, la, ln]  # (B, P, O)
    gp = torch.minimum(ww_other[bidx, f], ww_other[bidx, la])
    out = torch.where((gap > 0)[..., None], gp, contig)
    return out * (first >= 0)[..., None].to(out.dtype)


def _coverage(word, phrase):
    """(B,O) total count of the edges covering each observation word."""
    cov = phrase.sum(-1) + word[:, :, 0].sum(-1)
    O = word.shape[1]
    for ln in range(1, word.shape[2]):
        s = word[:, :, ln].sum(-1)  # segment ending at n, length ln + 1
        for k in range(ln + 1):
            if k < O:
                cov[:, :O - k] += s[:, k:]
    return cov


def agreement_counts(pf, pb, lay, *, agreement: bool, src_lengths, tgt_lengths):
    """(forward EdgeCounts, backward EdgeCounts) of one batch; see the module docstring."""
    if not agreement:
        return (EdgeCounts(pf.word, pf.phrase, pf.null), EdgeCounts(pb.word, pb.phrase, pb.null))
    dtype = pf.word.dtype
    I, J = pb.word.shape[1], pf.word.shape[1]
    Fww = pf.word[:, :, 0, :].transpose(1, 2)  # (B, I, J)
    Gww = pb.word[:, :, 0, :]  # (B, I, J)
    Fgap = torch.bmm(_gappy_ends(lay.ph_fwd, I, dtype).transpose(1, 2),
                     pf.phrase.transpose(1, 2))  # (B, I, J)
    Ggap = torch.bmm(pb.phrase, _gappy_ends(lay.ph_bwd, J, dtype))  # (B, I, J)
    # forward
    fw = _span_agreement(pf.word, pb.phrase, lay.span_state_tgt)
    fw[:, :, 0] = (Fww * (Gww + Ggap)).transpose(1, 2)
    fp = pf.phrase * _phrase_partner(lay.ph_fwd, pb.word, Gww).transpose(1, 2)
    # backward
    bw = _span_agreement(pb.word, pf.phrase, lay.span_state_src)
    bw[:, :, 0] = Gww * (Fww + Fgap)
    bp = pb.phrase * _phrase_partner(lay.ph_bwd, pf.word, Fww.transpose(1, 2)).transpose(1, 2)
    jv = (torch.arange(J, device=fw.device)[None, :] < tgt_lengths[:, None]).to(dtype)
    iv = (torch.arange(I, device=fw.device)[None, :] < src_lengths[:, None]).to(dtype)
    fn = (1 - _coverage(fw, fp)).clamp_min(0) * jv
    bn = (1 - _coverage(bw, bp)).clamp_min(0) * iv
    return EdgeCounts(fw, fp, fn), EdgeCounts(bw, bp, bn)


def _links(word, phrase, ph, n_states):
    """(B,O,S) link posteriors of one direction from its edge posteriors."""
    O = word.shape[1]
    out = word[:, :, 0].clone()
    for ln in range(1, word.shape[2]):
        s = word[:, :, ln]
        for k in range(ln + 1):
            if k < O:
                out[:, :O - k] += s[:, k:]
    if phrase.shape[-1]:
        first, last, _, gap = ph
        out = out + torch.bmm(phrase, _members(first, last, gap, n_states, phrase.dtype)[0])
    return out


def link_posteriors(pf, pb, lay):
    """(forward (B,I,J), backward (B,I,J)) word-link posteriors (or 0/1 Viterbi links):
    a word->phrase or phrase->word edge counts for each of its links, a gappy edge for its
    two ends. Cost O(B I J (L + P))."""
    I = pb.word.shape[1]
    J = pf.word.shape[1]
    lf = _links(pf.word, pf.phrase, lay.ph_fwd, I).transpose(1, 2)
    lb = _links(pb.word, pb.phrase, lay.ph_bwd, J)
    return lf, lb
