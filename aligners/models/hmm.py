"""The HMM alignment model (Vogel et al. 1996) with Och & Ney's NULL states, one direction.

States for a source sentence of length I: C = 2I, state i < I = "target word aligned to
source position i", state I + i = NULL remembering that the last aligned position was i.
From a state remembering position i' (word or NULL state):
    p(word state i)    = (1 - p0) * s[b(i - i')] / sum_{i''<I} s[b(i'' - i')]
    p(NULL state I+i)  = p0 * [i == i']
and the first state: word i with (1 - p0) * s[b(i + 1)] / Z (jump from a virtual position -1),
NULL I+i with p0 / I. b(w) = clamp(w, -K, K) + K buckets jump widths; `s` (2K+1,) are the
jump weights. Emissions: p(t_j | s_i) for word states, p(t_j | NULL) for NULL states.

The E-step is the factored HMM lattice (`aligners.lattices.hmm.hmm_posteriors`); the jump
M-step is one minorise-maximise step of the exact M-step (s_w <- n_w / sum_k m_k a_kw / Z_k),
so EM never decreases the likelihood even with conditionally normalised jumps.
"""

from __future__ import annotations

import torch

from aligners.lattices.hmm import hmm_posteriors, hmm_viterbi

__all__ = [
    "jump_buckets",
    "hmm_potentials",
    "hmm_direction_posteriors",
    "hmm_direction_viterbi",
    "jump_m_step",
]


def jump_buckets(*, n_src: int, max_jump: int, device=None) -> torch.Tensor:
    """(I+1, I) long: bucket of the jump from context k (0 = start, k = position k-1) to i."""
    prev = torch.arange(-1, n_src, device=device)[:, None]
    nxt = torch.arange(n_src, device=device)[None, :]
    return (nxt - prev).clamp(-max_jump, max_jump) + max_jump


def _log(x: torch.Tensor) -> torch.Tensor:
    return torch.log(x).clamp_min(torch.finfo(x.dtype).min)


def hmm_potentials(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    jump_weights: torch.Tensor,
    p0: float,
):
    """Factored potentials of the Och-Ney HMM.

    Shapes: link_probs (B, I, J) = p(t_j|s_i), null_probs (B, J), src_lengths (B,),
    jump_weights (2K+1,). Returns (log_init (B, C), log_trans (B, C, C), log_emit (B, J, C),
    state_mask (B, C), context_probs (B, I+1, I), norm (B, I+1)) with C = 2I; context_probs
    are the word-transition probabilities without (1 - p0) from the start (row 0) and from
    each position. Cost O(B I (I + J)) time and memory.
    """
    B, I, J = link_probs.shape
    K = (jump_weights.numel() - 1) // 2
    dtype = link_probs.dtype
    dev = link_probs.device
    bk = jump_buckets(n_src=I, max_jump=K, device=dev)
    valid = torch.arange(I, device=dev)[None, :] < src_lengths[:, None]  # (B, I)
    weights = jump_weights.to(dtype)[bk][None] * valid[:, None, :]  # (B, I+1, I)
    norm = weights.sum(-1).clamp_min(torch.finfo(dtype).tiny)
    ctx = weights / norm[..., None]
    words = (1 - p0) * ctx[:, 1:, :]
    nulls = p0 * torch.eye(I, dtype=dtype, device=dev).expand(B, I, I)
    top = torch.cat([words, nulls], dim=2)
    log_trans = _log(torch.cat([top, top], dim=1))
    init_null = (p0 / src_lengths.clamp_min(1).to(dtype))[:, None] * valid
    log_init = _log(torch.cat([(1 - p0) * ctx[:, 0, :], init_null], dim=1))
    emit_w = _log(link_probs.transpose(1, 2))
    emit_n = _log(null_probs)[:, :, None].expand(B, J, I)
    log_emit = torch.cat([emit_w, emit_n], dim=2)
    state_mask = torch.cat([valid, valid], dim=1)
    return log_init, log_trans, log_emit, state_mask, ctx, norm


def hmm_direction_posteriors(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
    jump_weights: torch.Tensor,
    p0: float,
    lattice: str = "och_ney",
):
    """E-step of one direction (source states generate target words).

    Shapes as `hmm_potentials`. Returns (log_likelihood (B,), link_posteriors (B, I, J),
    null_posteriors (B, J), jump_stats (2, 2K+1)): jump_stats[0] are the expected jump
    counts n_w, jump_stats[1] the minorise-maximise denominators sum_k m_k a_kw / Z_k.
    `lattice="generic"` runs the factored lattice `aligners.lattices.hmm.hmm_posteriors` on
    C = 2I states: O(B J I^2) batched mat-vecs. `"och_ney"` (default) runs the same scaled
    forward-backward specialised to this transition structure (tested equal): the word and
    NULL states remembering i' share their outgoing row and the jump weights are shared by
    the batch up to a per-row normaliser, so each step is one (B, I) x (I, I) GEMM.
    """
    B, I, J = link_probs.shape
    K = (jump_weights.numel() - 1) // 2
    if lattice == "generic":
        log_init, log_trans, log_emit, mask, _, norm = hmm_potentials(
            link_probs, null_probs, src_lengths=src_lengths, jump_weights=jump_weights, p0=p0
        )
        loglik, post, trans_counts = hmm_posteriors(
            log_init, log_trans, log_emit, lengths=tgt_lengths, state_mask=mask
        )
        link_post = post[:, :, :I].transpose(1, 2)
        null_post = post[:, :, I:].sum(-1)
        from_pos = trans_counts[:, :I, :I] + trans_counts[:, I:, :I]
        counts = torch.cat([post[:, :1, :I], from_pos], dim=1)  # (B, I+1, I)
    elif lattice == "och_ney":
        loglik, link_post, null_post, counts, norm = _och_ney_forward_backward(
            link_probs, null_probs, src_lengths=src_lengths, tgt_lengths=tgt_lengths,
            jump_weights=jump_weights, p0=p0,
        )
    else:
        raise ValueError(f"lattice must be 'och_ney' or 'generic', got {lattice!r}")
    dev = link_probs.device
    bk = jump_buckets(n_src=I, max_jump=K, device=dev).reshape(-1)
    valid = (torch.arange(I, device=dev)[None, :] < src_lengths[:, None]).to(counts.dtype)
    out = counts.sum(-1) / norm  # m_k / Z_k (B, I+1)
    den = (out[:, :, None] * valid[:, None, :]).sum(0).reshape(-1)
    n = counts.sum(0).reshape(-1)
    stats = torch.zeros(2, 2 * K + 1, dtype=torch.float64, device=dev)
    stats[0].index_add_(0, bk, n.double())
    stats[1].index_add_(0, bk, den.double())
    return loglik, link_post, null_post, stats


def _och_ney_forward_backward(link_probs, null_probs, *, src_lengths, tgt_lengths,
                              jump_weights, p0):
    """Scaled forward-backward of the Och-Ney HMM on (B, I) vectors.

    Returns (log_likelihood (B,), link_posteriors (B, I, J), null_posteriors (B, J),
    context_counts (B, I+1, I) expected word transitions out of start / each position,
    norm (B, I+1)). Cost O(B J I^2) as (B, I) x (I, I) GEMMs, O(B J I) memory.
    """
    B, I, J = link_probs.shape
    K = (jump_weights.numel() - 1) // 2
    dtype = link_probs.dtype
    tiny = torch.finfo(dtype).tiny
    dev = link_probs.device
    S = jump_weights.to(dtype)[jump_buckets(n_src=I, max_jump=K, device=dev)]  # (I+1, I)
    valid = torch.arange(I, device=dev)[None, :] < src_lengths[:, None]
    vf = valid.to(dtype)
    norm = (vf @ S.T).clamp_min(tiny)  # (B, I+1)
    inv = vf / norm[:, 1:]  # 1/Z per previous position, 0 at pads
    St = S[1:]
    jvalid = torch.arange(J, device=dev)[None, :] < tgt_lengths[:, None]
    ew = link_probs.transpose(1, 2) * vf[:, None, :]  # (B, J, I)
    en = null_probs * jvalid
    shift = torch.maximum(ew.amax(-1), en).clamp_min(tiny)  # (B, J)
    ew = ew / shift[..., None]
    en = en / shift
    q = 1.0 - p0
    aw = q * S[0][None] / norm[:, :1] * ew[:, 0]
    an = (p0 / src_lengths.clamp_min(1).to(dtype))[:, None] * vf * en[:, :1]
    c = (aw.sum(-1) + an.sum(-1)).clamp_min(tiny)
    aws, ans, cs = [aw / c[:, None]], [an / c[:, None]], [c]
    all_live = jvalid.all(0).tolist()  # most steps: no row has ended, no masking needed
    for j in range(1, J):
        sv = aws[-1] + ans[-1]
        u = q * ((sv * inv) @ St) * ew[:, j]
        v = p0 * sv * en[:, j, None]
        c = (u.sum(-1) + v.sum(-1)).clamp_min(tiny)
        if all_live[j]:
            aws.append(u / c[:, None])
            ans.append(v / c[:, None])
            cs.append(c)
            continue
        live = jvalid[:, j, None]
        aws.append(torch.where(live, u / c[:, None], aws[-1]))
        ans.append(torch.where(live, v / c[:, None], ans[-1]))
        cs.append(torch.where(jvalid[:, j], c, torch.ones_like(c)))
    cs = torch.stack(cs, 1)  # (B, J)
    ones = torch.ones(B, I, dtype=dtype, device=dev)
    beta = ones
    betas, gws = [beta], []
    last = torch.arange(J, device=dev)[None, :] >= (tgt_lengths - 1)[:, None]
    none_last = (~last.any(0)).tolist()
    StT = St.T.contiguous()
    for j in range(J - 2, -1, -1):
        g = beta / cs[:, j + 1, None]
        gw = ew[:, j + 1] * g
        new = q * inv * (gw @ StT) + p0 * en[:, j + 1, None] * g
        if none_last[j]:
            beta = new
        else:
            beta = torch.where(last[:, j, None], ones, new)
            gw = torch.where(last[:, j, None], torch.zeros_like(gw), gw)
        betas.append(beta)
        gws.append(gw)
    betas.reverse()
    gws.reverse()
    Bt = torch.stack(betas, 1)  # (B, J, I)
    Aw, An = torch.stack(aws, 1), torch.stack(ans, 1)
    jm = jvalid[..., None].to(dtype)
    link_post = (Aw * Bt * jm).transpose(1, 2)
    null_post = (An * Bt * jm).sum(-1)
    loglik = torch.where(jvalid, torch.log(cs) + torch.log(shift), torch.zeros_like(cs)).sum(1)
    counts = torch.zeros(B, I + 1, I, dtype=dtype, device=dev)
    counts[:, 0] = Aw[:, 0] * Bt[:, 0]
    if J > 1:
        SV = (Aw[:, :-1] + An[:, :-1]) * inv[:, None, :]  # (B, J-1, I)
        counts[:, 1:] = q * torch.bmm(SV.transpose(1, 2), torch.stack(gws, 1)) * St
    return loglik, link_post, null_post, counts, norm


def hmm_direction_viterbi(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
    jump_weights: torch.Tensor,
    p0: float,
) -> torch.Tensor:
    """Best alignment of one direction: (B, J) long, source position or -1 for NULL/pad.

    Shapes as `hmm_potentials`. Cost: the lattice's Viterbi, O(B J C^2).
    """
    I = link_probs.shape[1]
    log_init, log_trans, log_emit, mask, _, _ = hmm_potentials(
        link_probs, null_probs, src_lengths=src_lengths, jump_weights=jump_weights, p0=p0
    )
    path, _ = hmm_viterbi(log_init, log_trans, log_emit, lengths=tgt_lengths, state_mask=mask)
    J = link_probs.shape[2]
    jvalid = torch.arange(J, device=path.device)[None, :] < tgt_lengths[:, None]
    return torch.where((path < I) & jvalid & (path >= 0), path, torch.full_like(path, -1))


def jump_m_step(stats: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """New jump weights (2K+1,) from summed `jump_stats` (2, 2K+1); keeps unseen buckets.

    One minorise-maximise step s_w = n_w / den_w, rescaled to sum 1. Cost O(K).
    """
    n, den = stats[0], stats[1]
    new = torch.where(den > 0, n / den.clamp_min(1e-300), old.double())
    new = new.clamp_min(1e-12)
    return (new / new.sum()).to(old.dtype)
