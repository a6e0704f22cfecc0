"""IBM Model 1 (Brown et al. 1993): E-step posteriors for one direction, batched.

The model: each target word t_j picks a source position a_j in {NULL, 1..I} uniformly and is
generated with probability p(t_j | s_{a_j}). Its posteriors need no dynamic program:
p(a_j = i | s, t) = p(t_j|s_i) / (p(t_j|NULL) + sum_i' p(t_j|s_i')). The sparse tables that
hold p(t|s), the M-step and the optional variational-Bayes prior live in
`aligners.models.hmm.lexical`; the joint two-direction trainer in `agreement`.
"""

from __future__ import annotations

import torch

__all__ = ["ibm1_posteriors"]


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
