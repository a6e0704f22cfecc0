"""The phrase-candidate mining of one batch in torch: the reference that the numba miner
(`aligners.models.gappy_hsmm._mine_kernel.mine_candidates`) is tested equal to."""

import torch

__all__ = ["mine_candidates"]


def mine_candidates(obs: torch.Tensor, align: torch.Tensor, lengths: torch.Tensor, *,
                    max_len: int, n_words: int):
    """Phrase instances of one batch from one direction's Viterbi alignment.

    obs (B, N) observation word ids, align (B, N) state position per observation (-1 NULL
    or pad), lengths (B,). Returns (contiguous: {length: (words (M, length), count)} of
    spans all aligned to one state; gappy: (keys (M,) w1*V+w2, where (M, 4) [b, a, c, state
    position]) of pairs a < c - 1 aligned to one state that has exactly these two
    observations, with an observation aligned to another state between them).
    Cost O(B N (L + N)).
    """
    B, N = obs.shape
    dev = obs.device
    valid = torch.arange(N, device=dev)[None, :] < lengths[:, None]
    a = torch.where(valid, align, torch.full_like(align, -1))
    contiguous = {}
    for ln in range(2, max_len + 1):
        if N < ln:
            break
        win = a.unfold(1, ln, 1)  # (B, W, ln)
        same = (win == win[..., :1]).all(-1) & (win[..., 0] >= 0)
        contiguous[ln] = obs.long().unfold(1, ln, 1)[same]
    eq = (a[:, :, None] == a[:, None, :]) & (a[:, :, None] >= 0)
    cnt = eq.sum(2)
    ar = torch.arange(N, device=dev)
    cum = torch.cat([torch.zeros(B, 1, dtype=torch.long, device=dev),
                     (a >= 0).long().cumsum(1)], 1)  # cum[:, k] = aligned among 0..k-1
    between = cum[:, None, :N] - cum[:, 1:, None]  # [b, i, c]: aligned in i+1..c-1
    ok = eq & (ar[None, :, None] + 1 < ar[None, None, :]) & (cnt[:, :, None] == 2) & (between > 0)
    b, i, c = ok.nonzero(as_tuple=True)
    w = obs.long()
    keys = w[b, i] * n_words + w[b, c]
    where = torch.stack([b, i, c, a[b, i]], 1)
    return contiguous, (keys, where)
