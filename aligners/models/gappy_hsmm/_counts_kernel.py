"""Both directions' table gather of the phrasal E-step in one pass (issue 10), and the
M-step's normaliser of the sparse tables (numba).

Shapes: tables (P, 2) (the forward / backward tables interleaved,
`PhrasalAligner.pair_tables`), ids (any shape) int32/int64 pair slots; counts (P+1+Q,).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["gather2", "normalise_counts"]


@njit(cache=True)
def _gather2(tables, ids, out0, out1):
    n = tables.shape[0]
    for k in range(ids.shape[0]):
        s = ids[k]
        if s < 0 or s >= n:
            return k
        out0[k] = tables[s, 0]
        out1[k] = tables[s, 1]
    return -1


def gather2(tables: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(tables[ids, 0], tables[ids, 1]), each shaped like ids (int32/int64, any shape);
    tables (N, 2) (e.g. t_fwd, t_bwd interleaved): the values `index_select` gives, one
    cache line per id instead of two. O(|ids|)."""
    if tables.dim() != 2 or tables.shape[1] != 2:
        raise ValueError(f"gather2: tables must be (N, 2), got {tuple(tables.shape)}")
    if not (tables.device.type == "cpu" and ids.device.type == "cpu" and tables.is_contiguous()
            and ids.dtype in (torch.int32, torch.int64) and not tables.requires_grad):
        flat = ids.reshape(-1)
        return tuple(tables[:, c].index_select(0, flat).view(ids.shape) for c in (0, 1))
    flat = np.ascontiguousarray(ids.reshape(-1).numpy())
    out0 = torch.empty(ids.shape, dtype=tables.dtype)
    out1 = torch.empty(ids.shape, dtype=tables.dtype)
    bad = _gather2(tables.numpy(), flat, out0.view(-1).numpy(), out1.view(-1).numpy())
    if bad >= 0:
        raise IndexError(f"gather2: id {int(flat[bad])} outside [0, {tables.shape[0]})")
    return out0, out1


@njit(cache=True)
def _unit(k, wkeys, pkeys, vt, ut, forward):
    P = wkeys.shape[0]
    if k < P:
        return wkeys[k] // vt if forward else wkeys[k] % vt
    if k == P:
        return 0
    return pkeys[k - P - 1] // ut if forward else pkeys[k - P - 1] % ut


@njit(cache=True)
def _normalise(counts, wkeys, pkeys, vt, ut, forward, tot, out, floor, tiny):
    n = tot.shape[0]
    for k in range(counts.shape[0]):
        g = _unit(k, wkeys, pkeys, vt, ut, forward)
        if g < 0 or g >= n:
            return k
        tot[g] += counts[k]
    zero = counts[0] - counts[0]
    for k in range(counts.shape[0]):
        d = tot[_unit(k, wkeys, pkeys, vt, ut, forward)]
        v = counts[k] / max(d, tiny) if d > 0 else zero
        out[k] = max(v, floor)
    out[wkeys.shape[0]] = floor
    return -1


def normalise_counts(counts: torch.Tensor, word_keys: torch.Tensor, phrase_keys: torch.Tensor,
                     n_tgt_words: int, n_tgt_units: int, n: int, floor: float, *,
                     forward: bool) -> torch.Tensor | None:
    """(P+1+Q,) table from counts (P+1+Q,) in two passes: counts / (total of the counts
    with the same conditioning unit, added in index order as `index_add_` does; 0 where
    that is 0), clamped below at `floor`, slot P = floor (`PhrasalAligner.normalise`'s
    values, in the counts' dtype). O(N + n). The
    unit of a slot (`PhrasalAligner.givens`: key // width forward, key % width backward;
    slot P unit 0) is computed on the fly, no (P+1+Q,) index kept. None where the inputs
    are not CPU float32/float64 counts and int64 keys (the caller runs torch then)."""
    P, Q = word_keys.numel(), phrase_keys.numel()
    if not (counts.device.type == "cpu" and word_keys.device.type == "cpu"
            and counts.dim() == 1 and counts.numel() == P + 1 + Q
            and counts.dtype in (torch.float32, torch.float64) and not counts.requires_grad
            and word_keys.dtype == torch.int64 and phrase_keys.dtype == torch.int64):
        return None
    c = counts.numpy()
    tot = np.zeros(n, dtype=c.dtype)
    out = torch.empty(counts.shape, dtype=counts.dtype)
    bad = _normalise(c, word_keys.numpy(), phrase_keys.numpy(), n_tgt_words, n_tgt_units,
                     forward, tot, out.numpy(), c.dtype.type(floor),
                     c.dtype.type(np.finfo(c.dtype).tiny))
    if bad >= 0:
        raise ValueError(f"normalise_counts: the unit of slot {bad} is outside [0, {n})")
    return out
