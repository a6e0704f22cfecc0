"""The E-steps of one direction: IBM Model 1 (Brown et al. 1993, `ibm1_posteriors`: each
target word picks a source position in {NULL, 1..I} uniformly, so its posteriors need no
dynamic program) and the HMM alignment model (Vogel et al. 1996) with Och & Ney's NULL states.

States for a source sentence of length I: C = 2I, state i < I = "target word aligned to
source position i", state I + i = NULL remembering that the last aligned position was i.
From a state remembering position i' (word or NULL state):
    p(word state i)    = (1 - p0) * s[b(i - i')] / sum_{i''<I} s[b(i'' - i')]
    p(NULL state I+i)  = p0 * [i == i']
and the first state: word i with (1 - p0) * s[b(i + 1)] / Z (jump from a virtual position -1),
NULL I+i with p0 / I. b(w) = clamp(w, -K, K) + K buckets jump widths; `s` (2K+1,) are the
jump weights. Emissions: p(t_j | s_i) for word states, p(t_j | NULL) for NULL states.

The E-step and Viterbi run in the lattice layer: the specialised alignment HMM lattice
(`aligners.lattices.alignment_hmm`, I word + I NULL states; tested equal to the generic
factored HMM lattice on the explicit 2I states in tests/test_lattice_alignment_hmm.py). The jump
M-step is one minorise-maximise step of the exact M-step (s_w <- n_w / sum_k m_k a_kw / Z_k),
so EM never decreases the likelihood even with conditionally normalised jumps.
"""

from __future__ import annotations

import torch

from aligners.lattices.alignment_hmm import alignment_hmm_posteriors, alignment_hmm_viterbi

__all__ = [
    "ibm1_posteriors",
    "jump_buckets",
    "hmm_direction_posteriors",
    "hmm_direction_viterbi",
    "jump_m_step",
]


def jump_buckets(*, n_src: int, max_jump: int, device=None) -> torch.Tensor:
    """(I+1, I) long: bucket of the jump from context k (0 = start, k = position k-1) to i."""
    prev = torch.arange(-1, n_src, device=device)[:, None]
    nxt = torch.arange(n_src, device=device)[None, :]
    return (nxt - prev).clamp(-max_jump, max_jump) + max_jump


def _jump_scores(jump_weights: torch.Tensor, *, n_src: int, dtype) -> torch.Tensor:
    """(I+1, I) jump weight of each (context, next position) pair: the lattice's jump_scores."""
    K = (jump_weights.numel() - 1) // 2
    return jump_weights.to(dtype)[jump_buckets(n_src=n_src, max_jump=K,
                                               device=jump_weights.device)]



def hmm_direction_posteriors(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
    jump_weights: torch.Tensor,
    p0: float,
):
    """E-step of one direction (source states generate target words).

    Shapes: link_probs (B, I, J) = p(t_j|s_i), null_probs (B, J), lengths (B,),
    jump_weights (2K+1,). Returns (log_likelihood (B,), link_posteriors (B, I, J),
    null_posteriors (B, J), jump_stats (2, 2K+1)): jump_stats[0] are the expected jump
    counts n_w, jump_stats[1] the minorise-maximise denominators sum_k m_k a_kw / Z_k.
    Runs the scaled forward-backward of the lattice
    `aligners.lattices.alignment_hmm.alignment_hmm_posteriors`: each step is one
    (B, I) x (I, I) GEMM, O(B J I^2) time.
    """
    B, I, J = link_probs.shape
    K = (jump_weights.numel() - 1) // 2
    loglik, link_post, null_post, counts, norm = alignment_hmm_posteriors(
        link_probs, null_probs, _jump_scores(jump_weights, n_src=I, dtype=link_probs.dtype),
        src_lengths=src_lengths, tgt_lengths=tgt_lengths, p0=p0,
    )
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

    Shapes as `hmm_direction_posteriors`; the lattice
    `aligners.lattices.alignment_hmm.alignment_hmm_viterbi`, O(B J I^2).
    """
    B, I, J = link_probs.shape
    path, _ = alignment_hmm_viterbi(
        link_probs, null_probs, _jump_scores(jump_weights, n_src=I, dtype=link_probs.dtype),
        src_lengths=src_lengths, tgt_lengths=tgt_lengths, p0=p0)
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


def ibm1_posteriors(
    link_probs: torch.Tensor,
    null_probs: torch.Tensor,
    *,
    src_lengths: torch.Tensor,
    tgt_lengths: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Model 1 posteriors of one direction (source generates target).

    Shapes: link_probs (B, I, J) = p(t_j | s_i) (anything in padded cells), null_probs (B, J)
    = p(t_j | NULL), lengths (B,). Returns (log_likelihood (B,), link_posteriors (B, I, J),
    null_posteriors (B, J)), zero in padded cells; for each real j the link posteriors over i
    plus the NULL posterior sum to 1. log_likelihood = sum_j log(sum_i p(t_j|s_i) / (I+1)).
    Cost O(B I J) time and memory. For the other direction pass the transposes.
    """
    B, I, J = link_probs.shape
    ivalid = torch.arange(I, device=link_probs.device)[None, :] < src_lengths[:, None]
    jvalid = torch.arange(J, device=link_probs.device)[None, :] < tgt_lengths[:, None]
    links = link_probs * ivalid[:, :, None]
    null = null_probs * jvalid
    total = links.sum(1) + null  # (B, J)
    safe = torch.where(jvalid, total, torch.ones_like(total))
    post = links * jvalid[:, None, :] / safe[:, None, :]
    null_post = null / safe
    logz = torch.log(safe) - torch.log1p(src_lengths.to(safe.dtype))[:, None]
    log_likelihood = (logz * jvalid).sum(1)
    return log_likelihood, post, null_post
