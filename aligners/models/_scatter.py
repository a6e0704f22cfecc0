"""Count scatter-add of the EM E-steps on CPU: `counts[ids[n]] += values[n]` in order.

counts (P,) float32/float64 (any strides), ids (N,) int32/int64 (read flat), values (N,).
`scatter_add2_`: counts (P, 2) and two value arrays (both directions interleaved: one cache
line per id). Bit for bit `counts.index_add_(0, ids, values)` (which adds in index order on
CPU) at about half its cost; other devices or dtypes use `index_add_`. An id outside [0, P)
raises ValueError, the additions before it kept. Cost O(N).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["kernel_ready", "scatter_add_", "scatter_add2_"]


@njit(cache=True)
def _scatter(counts, ids, values):
    """counts[ids[k], c] += values[c][k] for k in order (counts (P, m), values a tuple of m
    (N,) arrays); returns the first k whose id lies outside [0, P), or -1."""
    n = counts.shape[0]
    for k in range(ids.shape[0]):
        i = ids[k]
        if i < 0 or i >= n:
            return k
        for c in range(len(values)):
            counts[i, c] += values[c][k]
    return -1


_DTYPES = (torch.float32, torch.float64)


def kernel_ready(counts, ids, values) -> bool:
    """Whether the numba loops may serve these tensors: CPU, float32/float64 counts and
    values of one dtype, int32/int64 ids, no autograd (else the caller uses torch)."""
    return (counts.device.type == "cpu" and counts.dtype in _DTYPES
            and not counts.requires_grad and ids.device.type == "cpu"
            and ids.dtype in (torch.int32, torch.int64)
            and all(v.device.type == "cpu" and v.dtype == counts.dtype and not v.requires_grad
                    for v in values))


def _np(x: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(x.reshape(-1).numpy())


def _run(counts: torch.Tensor, ids: torch.Tensor, values) -> torch.Tensor:
    """`_scatter` on numpy views of the tensors (counts (P,) as (P, 1)); ValueError when the
    sizes differ or an id is outside [0, P). Returns counts."""
    for v in values:
        if v.numel() != ids.numel():
            raise ValueError(f"scatter_add_: {ids.numel()} ids but {v.numel()} values")
    i = _np(ids)
    bad = _scatter(counts.numpy().reshape(counts.shape[0], -1), i, tuple(map(_np, values)))
    if bad >= 0:
        raise ValueError(f"scatter_add_: id {int(i[bad])} outside [0, {counts.shape[0]})")
    return counts


def scatter_add_(counts: torch.Tensor, ids: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """counts[ids[n]] += values[n] for n in order (ids, values flattened); returns counts.
    See the module docstring (shapes, cost, exactness)."""
    if counts.dim() != 1 or not kernel_ready(counts, ids, (values,)):
        return counts.index_add_(0, ids.reshape(-1), values.reshape(-1))
    return _run(counts, ids, (values,))


def scatter_add2_(counts: torch.Tensor, ids: torch.Tensor, v0: torch.Tensor,
                  v1: torch.Tensor) -> torch.Tensor:
    """counts[ids[n], 0] += v0[n] and counts[ids[n], 1] += v1[n] for n in order; counts
    (P, 2); returns counts. Equal to `scatter_add_` on each column (module docstring)."""
    if counts.dim() != 2 or counts.shape[1] != 2:
        raise ValueError(f"scatter_add2_: counts must be (P, 2), got {tuple(counts.shape)}")
    if not kernel_ready(counts, ids, (v0, v1)):
        for col, v in enumerate((v0, v1)):
            counts[:, col].index_add_(0, ids.reshape(-1), v.reshape(-1))
        return counts
    return _run(counts, ids, (v0, v1))
