"""Alignment HMM lattice with Och-Ney NULL states, specialised to its transition structure.

Over target positions j < J, C = 2I states: word i ("t_j aligned to s_i") and NULL I + i
("t_j aligned to NULL, last aligned position i"). One non-negative ``jump_scores (I+1, I)``
shared by the batch (row 0 from the start, row i'+1 from position i'):

    p(word i   | i') = (1 - p0) * S[i'+1, i] / sum_{i'' < I_b} S[i'+1, i'']
    p(NULL I+i | i') = p0 * [i == i']
    p(first = word i) = (1 - p0) * S[0, i] / sum_{i'' < I_b} S[0, i''],
    p(first = NULL I+i) = p0 / I_b.

Emissions are probabilities: ``link_probs (B, I, J)``, ``null_probs (B, J)``. Each step is
one (B, I) x (I, I) product (tested equal to `hmm` on the explicit 2I-state expansion).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from aligners.lattices._core import backtrack, length_mask, semiring_zero
from aligners.semirings import log_or_zero

__all__ = [
    "AlignmentHMMPosteriors",
    "AlignmentHMMViterbi",
    "alignment_hmm_posteriors",
    "alignment_hmm_viterbi",
]


class AlignmentHMMPosteriors(NamedTuple):
    """log_likelihood (B,); link_posteriors (B, I, J); null_posteriors (B, J);
    jump_counts (B, I+1, I) expected word transitions out of the start (row 0) and out of each
    remembered position i' (row i'+1) into word state i; jump_norm (B, I+1) the per-row
    normalisers sum_{i < I_b} S[row, i]. jump_counts is None when not asked for
    (`alignment_hmm_posteriors(..., jump_counts=False)`)."""

    log_likelihood: torch.Tensor
    link_posteriors: torch.Tensor
    null_posteriors: torch.Tensor
    jump_counts: torch.Tensor | None
    jump_norm: torch.Tensor


class AlignmentHMMViterbi(NamedTuple):
    """states (B, J) long in the 2I-state convention (i word, I+i NULL), -1 past the target
    length; score (B,) the best path's log-probability."""

    states: torch.Tensor
    score: torch.Tensor


def _check(link_probs, null_probs, jump_scores, src_lengths, tgt_lengths):
    B, I, J = link_probs.shape
    if null_probs.shape != (B, J):
        raise ValueError(f"null_probs must be (B, J) = {(B, J)}, got {tuple(null_probs.shape)}")
    if jump_scores.shape != (I + 1, I):
        raise ValueError(f"jump_scores must be (I+1, I) = {(I + 1, I)}, "
                         f"got {tuple(jump_scores.shape)}")
    if src_lengths.shape != (B,) or tgt_lengths.shape != (B,):
        raise ValueError("src_lengths and tgt_lengths must be (B,)")


def _jump_rows(jump_scores, valid, dtype):
    """S (I+1, I) in `dtype`, per-item row normalisers (B, I+1), 1/Z per position (B, I)."""
    tiny = torch.finfo(dtype).tiny
    S = jump_scores.to(dtype)
    vf = valid.to(dtype)
    norm = (vf @ S.T).clamp_min(tiny)
    return S, vf, norm, vf / norm[:, 1:]


@torch.no_grad()
def alignment_hmm_posteriors(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    jump_scores: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
    p0: float,
    jump_counts: bool = True,
) -> AlignmentHMMPosteriors:
    """Scaled forward-backward of the alignment HMM -> `AlignmentHMMPosteriors`.

    link_probs (B, I, J), null_probs (B, J), jump_scores (I+1, I), src_lengths (B,) in [1, I],
    tgt_lengths (B,) in [1, J]; padded entries are ignored. Cost O(B J I^2) time as (B, I) x
    (I, I) GEMMs, O(B J I) memory, on time-major buffers written in place: no autograd graph
    (the generic `hmm` lattice is differentiable). `jump_counts=False` skips the jump counts
    (None), all else bit-identical. The constants are folded into the jump matrix.
    """
    _check(link_probs, null_probs, jump_scores, src_lengths, tgt_lengths)
    B, I, J = link_probs.shape
    dtype = link_probs.dtype
    tiny = torch.finfo(dtype).tiny
    dev = link_probs.device
    valid = length_mask(src_lengths, I)
    S, vf, norm, inv = _jump_rows(jump_scores, valid, dtype)
    q = 1.0 - p0
    Sq = q * S[1:]  # (I, I) word transitions with (1 - p0) folded in
    SqT = Sq.T.contiguous()
    jvalid = length_mask(tgt_lengths, J)
    # time-major (J, B, I): every per-position slice below is contiguous
    ew = (link_probs.permute(2, 0, 1) * vf).contiguous()  # (J, B, I)
    en = (null_probs * jvalid).T  # (J, B)
    shift = torch.maximum(ew.amax(-1), en).clamp_min(tiny)  # (J, B)
    ew = ew.div_(shift[..., None])
    en = en / shift
    enp = (p0 * en)[..., None].contiguous()  # (J, B, 1) NULL-state emission with p0
    Aw, An = torch.empty(2, J, B, I, dtype=dtype, device=dev)  # word / NULL forward
    cs = torch.empty(J, B, dtype=dtype, device=dev)
    aw = q * S[0][None] / norm[:, :1] * ew[0]
    an = (p0 / src_lengths.clamp_min(1).to(dtype))[:, None] * vf * en[0, :, None]
    c = (aw.sum(-1) + an.sum(-1)).clamp_min(tiny)
    torch.div(aw, c[:, None], out=Aw[0])
    torch.div(an, c[:, None], out=An[0])
    cs[0] = c
    all_live = jvalid.all(0).tolist()  # most steps: no row has ended, no masking needed
    for j in range(1, J):
        sv = Aw[j - 1] + An[j - 1]
        u = torch.mm(sv * inv, Sq).mul_(ew[j])
        v = sv.mul_(enp[j])
        c = u.sum(-1).add_(v.sum(-1)).clamp_min_(tiny)
        rc = c.reciprocal()[:, None]
        if all_live[j]:
            torch.mul(u, rc, out=Aw[j])
            torch.mul(v, rc, out=An[j])
            cs[j] = c
            continue
        live = jvalid[:, j, None]
        torch.where(live, u.mul_(rc), Aw[j - 1], out=Aw[j])
        torch.where(live, v.mul_(rc), An[j - 1], out=An[j])
        cs[j] = torch.where(jvalid[:, j], c, torch.ones_like(c))
    Bt, Gw = _backward_inplace(ew, enp, cs, inv, SqT, tgt_lengths, jump_counts)
    Bt.mul_(jvalid.T[..., None].to(dtype))  # (J, B, 1): zero past each target length
    link_post = (Aw * Bt).permute(1, 2, 0)  # (B, I, J)
    null_post = (An * Bt).sum(-1).T  # (B, J)
    loglik = torch.where(jvalid, (torch.log(cs) + torch.log(shift)).T,
                         torch.zeros(B, J, dtype=dtype, device=dev)).sum(1)
    if not jump_counts:
        return AlignmentHMMPosteriors(loglik, link_post, null_post, None, norm)
    first = (Aw[0] * Bt[0])[:, None]
    if J > 1:
        SV = (Aw[:-1] + An[:-1]).mul_(inv)  # (J-1, B, I)
        rest = torch.bmm(SV.permute(1, 2, 0), Gw.transpose(0, 1)).mul_(Sq)
    else:
        rest = torch.zeros(B, I, I, dtype=dtype, device=dev)
    counts = torch.cat([first, rest], dim=1)
    return AlignmentHMMPosteriors(loglik, link_post, null_post, counts, norm)


def _backward_inplace(ew, enp, cs, inv, SqT, tgt_lengths, jump_counts):
    """The scaled backward of `alignment_hmm_posteriors`: Bt (J, B, I) and Gw, the (J-1, B, I)
    scaled emission-weighted backward of step j -> j+1 (for the jump counts; without them
    one reused (1, B, I) buffer)."""
    J, B, I = ew.shape
    rcs = cs.reciprocal()[..., None]  # (J, B, 1)
    Bt = torch.empty(J, B, I, dtype=ew.dtype, device=ew.device)
    Gw = torch.empty(max(J - 1, 1) if jump_counts else 1, B, I, dtype=ew.dtype, device=ew.device)
    Bt[J - 1] = 1.0
    last = torch.arange(J, device=ew.device)[None, :] >= (tgt_lengths - 1)[:, None]  # (B, J)
    none_last = (~last.any(0)).tolist()
    for j in range(J - 2, -1, -1):
        g = Bt[j + 1] * rcs[j + 1]
        gw = torch.mul(ew[j + 1], g, out=Gw[j if jump_counts else 0])
        new = torch.addcmul(g.mul_(enp[j + 1]), inv, torch.mm(gw, SqT))
        if none_last[j]:
            Bt[j] = new
        else:
            lj = last[:, j, None]
            torch.where(lj, torch.ones_like(new), new, out=Bt[j])
            if jump_counts:
                gw.masked_fill_(lj, 0.0)
    return Bt, Gw


def _viterbi_potentials(log_links, null_probs, jump_scores, src_lengths, p0):
    """The Viterbi recursion's log potentials from `log_links` (B, J, I) = log link_probs
    transposed (`log_or_zero`): valid (B, I) source mask; lw (B, J, I) word emissions
    (`log_links`, masked in place); ln (B, J) NULL emissions; log_p0 (0-d); ltrans (B, I, I)
    [k, i] word jumps k -> i times (1 - p0); dw, dn (B, I) the word and NULL scores at the
    first target position. Padded source positions hold the semiring zero. Shared by the
    torch recursion and the CPU kernel (`_alignment_hmm_viterbi_kernel`), so both start from
    the same numbers."""
    I = log_links.shape[2]
    dtype = log_links.dtype
    neg = semiring_zero(dtype)
    valid = length_mask(src_lengths, I)
    S, _, norm, _ = _jump_rows(jump_scores, valid, dtype)
    lw = log_links.masked_fill_(~valid[:, None, :], neg)
    ln = log_or_zero(null_probs)
    log_q = log_or_zero(torch.tensor(1.0 - p0, dtype=dtype))
    log_p0 = log_or_zero(torch.tensor(p0, dtype=dtype))
    ltrans = (log_or_zero(S[1:][None] / norm[:, 1:, None]) + log_q).masked_fill(
        ~valid[:, None, :], neg)
    dw = (log_or_zero(S[0][None] / norm[:, :1]) + log_q + lw[:, 0]).masked_fill(~valid, neg)
    init_n = log_or_zero(p0 / src_lengths.clamp_min(1).to(dtype))
    dn = (init_n[:, None] + ln[:, :1]).expand(-1, I).masked_fill(~valid, neg)
    return valid, lw, ln, log_p0, ltrans, dw, dn


def alignment_hmm_viterbi(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    jump_scores: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
    p0: float,
) -> AlignmentHMMViterbi:
    """Viterbi path of the alignment HMM in log space -> `AlignmentHMMViterbi(states (B, J),
    score (B,))`; shapes as `alignment_hmm_posteriors`. Cost O(B J I^2) time (I predecessors per
    state: a word and a NULL state remembering i' share their row), O(B J I) backpointers. Ties:
    a word predecessor beats the NULL one remembering the same position.
    """
    _check(link_probs, null_probs, jump_scores, src_lengths, tgt_lengths)
    B, I, J = link_probs.shape
    dev = link_probs.device
    neg = semiring_zero(link_probs.dtype)
    jvalid = length_mask(tgt_lengths, J)
    valid, lw, ln, log_p0, ltrans, dw, dn = _viterbi_potentials(
        log_or_zero(link_probs.transpose(1, 2)), null_probs, jump_scores, src_lengths, p0)
    args, from_null = [], []
    live = jvalid.unbind(1)
    for j in range(1, J):
        nul = dn > dw
        m = torch.maximum(dw, dn)
        best, arg = (m[:, :, None] + ltrans).max(dim=1)
        new_w = best + lw[:, j]
        new_n = (m + log_p0 + ln[:, j, None]).masked_fill(~valid, neg)
        lj = live[j][:, None]
        dw = torch.where(lj, new_w, dw)
        dn = torch.where(lj, new_n, dn)
        args.append(arg)
        from_null.append(nul)
    score, z = torch.cat([dw, dn], dim=1).max(dim=1)
    if J == 1:
        return AlignmentHMMViterbi(z.unsqueeze(1), score)
    # predecessor of every state in the 2I-state convention: word state i came from the
    # remembered position args[i], NULL state I+i from i; that position's best was NULL or not
    pos = torch.cat([torch.stack(args, 1),
                     torch.arange(I, device=dev).expand(B, J - 1, I)], -1)  # (B, J-1, 2I)
    prev = pos + I * torch.stack(from_null, 1).gather(-1, pos).long()
    states, _ = backtrack(None, prev, last=tgt_lengths - 1, label=z)
    return AlignmentHMMViterbi(states, score)
