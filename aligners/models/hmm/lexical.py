"""M-step of the word models' sparse lexical tables over co-occurring word pairs.

Both directions share one pair index (`aligners.data.bitext.PairIndex`): p(t|s) and p(s|t)
are the same vector of expected counts (P + 1,) normalised by source word or by target word.
"""

from __future__ import annotations

import torch

__all__ = ["normalise_counts", "normalise_dense"]

_TINY = 1e-20  # floor of every probability so that log() stays finite


def normalise_counts(
    counts: torch.Tensor,
    given: torch.Tensor,
    *,
    n_given: int,
    n_outcomes: int,
    alpha: float,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sparse conditional table from expected counts: (P+1,) -> (P+1,) probabilities.

    `given (P,)` is the conditioning word of each pair. alpha = 0: maximum likelihood
    c / sum_given c; alpha > 0: variational Bayes with a symmetric Dirichlet(alpha) prior over
    `n_outcomes` words, exp(digamma(c + a) - digamma(sum c + n a)). Slot P gets the floor.
    `out (P+1,)`, when given, receives the result (it may be the old table, not `counts`).
    Cost O(P) time; maximum likelihood needs no (P,) temporary besides `out`.
    """
    c = counts[:-1]
    tot = torch.zeros(n_given, dtype=c.dtype, device=c.device).index_add_(0, given, c)
    if out is None:
        out = torch.empty_like(counts)
    body = out[:-1]
    if alpha > 0:
        num = torch.exp(torch.digamma(c + alpha))
        den = torch.exp(torch.digamma(tot + alpha * n_outcomes))
        torch.div(num, den[given].clamp_min(_TINY), out=body)
    else:  # gather the denominators into `out`, then divide in place: no P-sized temporaries
        torch.index_select(tot.clamp_min_(_TINY), 0, given, out=body)
        torch.div(c, body, out=body)
    out[-1] = _TINY
    return out.clamp_min_(_TINY)


def normalise_dense(counts: torch.Tensor, *, alpha: float) -> torch.Tensor:
    """A dense distribution (V,) from expected counts (the NULL word's table). Cost O(V)."""
    if alpha > 0:
        total = counts.sum() + alpha * len(counts)
        p = torch.exp(torch.digamma(counts + alpha) - torch.digamma(total))
    else:
        p = counts / counts.sum().clamp_min(_TINY)
    return p.clamp_min(_TINY)
