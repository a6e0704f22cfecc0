"""Agreement over the phrasal space (Bansal et al. 2011, sec. 4) and word-link posteriors.

Edges of the forward model (source states -> target) and their backward mirrors:
  word i -> word j                       <-> word j -> word i
  word i -> target phrase (j1..j2)       <-> target phrase state (j1..j2) -> word i
  source phrase (i1..i2) -> word j       <-> word j -> source phrase (i1..i2)
  gappy source (i1 ? i2) -> word j       ~   min of the backward word edges j->i1, j->i2
Each direction's E-step count of an edge is q = (own posterior) * (mirror posterior).
A gappy edge has no mirror; it is multiplied by the min of the two word edges (an upper
bound of its mirror's posterior), and the other direction's word edges j->i1, j->i2 take
the gappy edge's posterior into their partner mass ("mixed", sec. 4). A direction's NULL
count of an observation word is 1 minus the q of all edges covering it (clamped at 0).
Computed on the E-step's sparse form (`SparsePhrasalPosteriors`: one-word edges word
(B,O,S), the listed longer segments seg (M,S), phrase (B,O,P), null (B,O)); the same
quantities on the dense form (word (B,O,L,S)) are the tests' oracle,
tests/phrasal_dense_agreement.py (equal bit for bit). Cost O(B I J (1 + Pf + Pb) + M I).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["EdgeCounts", "sparse_agreement_counts", "sparse_link_posteriors"]


class EdgeCounts(NamedTuple):
    """Expected counts of one direction's edges: word = (one-word edges (B,O,S), listed
    longer segments (M,S)) (the dense oracle: (B,O,L,S)), phrase (B,O,P), null (B,O)."""

    word: torch.Tensor
    phrase: torch.Tensor
    null: torch.Tensor


def _sparse_coverage(word, seg, phrase, d):
    """(B,O) total count of the edges covering each observation word, on sparse posteriors
    (word (B,O,S), seg (M,S)); the dense oracle's additions in the same order (per extra
    length, then offset)."""
    cov = phrase.sum(-1) + word.sum(-1)
    flat = cov.view(-1)
    s = seg.sum(-1)
    for pos, rows in d.cover:
        flat[pos] += s[rows]
    return cov


def sparse_agreement_counts(pf, pb, df, db, *, agreement: bool):
    """(forward EdgeCounts, backward EdgeCounts) of sparse posteriors (`SparsePhrasalPosteriors`
    pf, pb) with the batch's `DirectionConst`s df, db; EdgeCounts.word is (word (B,O,S),
    seg (M,S)). Same counts as the dense oracle (module docstring). O(B I J (1 + P) + M I)."""
    if not agreement:
        return (EdgeCounts((pf.word, pf.seg), pf.phrase, pf.null),
                EdgeCounts((pb.word, pb.seg), pb.phrase, pb.null))
    Fww = pf.word.transpose(1, 2)  # (B, I, J)
    Gww = pb.word  # (B, I, J)
    Fgap = torch.bmm(df.gends.to(pf.word.dtype).transpose(1, 2),
                     pf.phrase.transpose(1, 2))  # (B, I, J)
    Ggap = torch.bmm(pb.phrase, db.gends.to(pb.word.dtype))  # (B, I, J)

    def seg_q(post, other_phrase, d):  # segment x mirror phrase state (at listed spans)
        return post.seg * other_phrase.transpose(1, 2)[d.seg_item, d.mirror]

    def partner(d, other_seg, ww_other):  # (B,P,O) mirror of each phrase state
        bidx = torch.arange(d.first.shape[0], device=d.first.device)[:, None]
        f, la = d.first.clamp_min(0), d.last.clamp_min(0)
        if other_seg.shape[0]:
            contig = torch.where((d.partner >= 0)[..., None], other_seg[d.partner.clamp_min(0)],
                                 torch.zeros((), dtype=other_seg.dtype, device=f.device))
        else:
            contig = torch.zeros(d.first.shape + (ww_other.shape[2],), dtype=ww_other.dtype,
                                 device=f.device)
        gp = torch.minimum(ww_other[bidx, f], ww_other[bidx, la])
        out = torch.where((d.gap > 0)[..., None], gp, contig)
        return out * (d.first >= 0)[..., None].to(out.dtype)

    fw = (Fww * (Gww + Ggap)).transpose(1, 2).contiguous()
    fs = seg_q(pf, pb.phrase, df)
    fp = pf.phrase * partner(df, pb.seg, Gww).transpose(1, 2)
    bw = (Gww * (Fww + Fgap)).contiguous()
    bs = seg_q(pb, pf.phrase, db)
    bp = pb.phrase * partner(db, pf.seg, Fww.transpose(1, 2)).transpose(1, 2)
    dtype, dev = fw.dtype, fw.device
    J, I = fw.shape[1], bw.shape[1]
    jv = (torch.arange(J, device=dev)[None, :] < df.obs_lengths[:, None]).to(dtype)
    iv = (torch.arange(I, device=dev)[None, :] < db.obs_lengths[:, None]).to(dtype)
    fn = (1 - _sparse_coverage(fw, fs, fp, df)).clamp_min(0) * jv
    bn = (1 - _sparse_coverage(bw, bs, bp, db)).clamp_min(0) * iv
    return EdgeCounts((fw, fs), fp, fn), EdgeCounts((bw, bs), bp, bn)


def _sparse_links(word, seg, phrase, d):
    """(B,O,S) link posteriors of one direction from sparse edge posteriors."""
    out = word.clone()
    flat = out.view(-1, out.shape[2])
    for pos, rows in d.cover:
        flat[pos] += seg[rows]
    if phrase.shape[-1]:
        out = out + torch.bmm(phrase, d.members.to(phrase.dtype))
    return out


def sparse_link_posteriors(pf, pb, df, db):
    """(forward (B,I,J), backward (B,I,J)) word-link posteriors of sparse posteriors: a
    word->phrase or phrase->word edge counts for each of its links, a gappy edge for its two
    ends (0/1 links under Viterbi). O(B I J (1 + P) + M I)."""
    lf = _sparse_links(pf.word, pf.seg, pf.phrase, df).transpose(1, 2)
    lb = _sparse_links(pb.word, pb.seg, pb.phrase, db)
    return lf, lb
