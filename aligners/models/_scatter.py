"""Count scatter-add of the EM E-steps on CPU: `counts[ids[n]] += values[n]` in order.

Shapes: counts (P,) float32/float64 (contiguous), ids (N,) int32/int64 of any shape (read
flat), values (N,) the counts' dtype. Cost O(N) time, no extra memory on CPU. Same result
as `counts.index_add_(0, ids, values)`, bit for bit: torch's CPU `index_add_` of a 1-D
tensor adds in index order, and so does this loop; but torch's loop costs about twice as
much per element for the large tables of the aligners (N ~ 10^6 ids into P ~ 10^7 slots:
memory-bound either way, torch also pays a per-element stride computation; issue 10's
profile). Any other device, dtype or layout falls back to `index_add_`. An id outside
[0, P) raises ValueError (as `index_add_` raises), and nothing is added then.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["scatter_add_"]


@njit(cache=True)
def _check(ids, n):
    for k in range(ids.shape[0]):
        if ids[k] < 0 or ids[k] >= n:
            return k
    return -1


@njit(cache=True)
def _scatter(counts, ids, values):
    for k in range(ids.shape[0]):
        counts[ids[k]] += values[k]


_DTYPES = (torch.float32, torch.float64)


def scatter_add_(counts: torch.Tensor, ids: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """counts[ids[n]] += values[n] for n in order (ids, values flattened); returns counts.
    See the module docstring (shapes, cost, exactness)."""
    fast = (counts.device.type == "cpu" and ids.device.type == "cpu"
            and values.device.type == "cpu" and counts.dim() == 1 and counts.is_contiguous()
            and counts.dtype in _DTYPES and values.dtype == counts.dtype
            and ids.dtype in (torch.int32, torch.int64) and not counts.requires_grad
            and not values.requires_grad)
    ids, values = ids.reshape(-1), values.reshape(-1)
    if not fast:
        return counts.index_add_(0, ids, values)
    if ids.numel() != values.numel():
        raise ValueError(f"scatter_add_: {ids.numel()} ids but {values.numel()} values")
    c = counts.numpy()
    i = np.ascontiguousarray(ids.numpy())
    bad = _check(i, c.shape[0])
    if bad >= 0:
        raise ValueError(f"scatter_add_: id {int(i[bad])} outside [0, {c.shape[0]})")
    _scatter(c, i, np.ascontiguousarray(values.detach().numpy()))
    return counts
