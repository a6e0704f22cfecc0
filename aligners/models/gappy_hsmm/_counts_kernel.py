"""Both directions' word-slot count scatter of the phrasal E-step in one pass, and both
directions' table gather likewise (issue 10).

Shapes: counts (P, 2) (the forward / backward counts interleaved, `PhrasalAligner.c_lex`),
ids (B, I, J) int32/int64 pair slots, fwd (B, J, I) forward counts (observation-major),
bwd (B, I, J) backward counts. Adds counts[ids[b,i,j], 0] += fwd[b,j,i] in (b, j, i) order
and counts[ids[b,i,j], 1] += bwd[b,i,j] in (b, i, j) order: per column the order of
`scatter_add_(c_fwd, ids.transpose(1, 2), fwd)` and `scatter_add_(c_bwd, ids, bwd)`, so the
sums are the same bit for bit; both directions of one item run back to back, so the second
pass finds the item's slots (one cache line per slot for both columns) still in cache.
Cost O(B I J) time, no extra memory. Other devices / dtypes: the two `scatter_add_` calls.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from aligners.models._scatter import kernel_ready, scatter_add_

__all__ = ["scatter_word_slots_", "gather2", "normalise_counts"]


@njit(cache=True)
def _word_slots(counts, ids, fwd, bwd):
    n = counts.shape[0]
    for b in range(ids.shape[0]):
        for i in range(ids.shape[1]):
            for j in range(ids.shape[2]):
                s = ids[b, i, j]
                if s < 0 or s >= n:
                    return s
                counts[s, 1] += bwd[b, i, j]
        for j in range(ids.shape[2]):
            for i in range(ids.shape[1]):
                counts[ids[b, i, j], 0] += fwd[b, j, i]
    return -1


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


def scatter_word_slots_(counts: torch.Tensor, ids: torch.Tensor, fwd: torch.Tensor,
                        bwd: torch.Tensor) -> torch.Tensor:
    """counts[:, 0] += fwd at ids.transpose(1, 2), counts[:, 1] += bwd at ids, in the
    orders of the module docstring; returns counts."""
    B, I, J = ids.shape
    if tuple(fwd.shape) != (B, J, I) or tuple(bwd.shape) != (B, I, J):
        raise ValueError(f"scatter_word_slots_: ids {(B, I, J)} needs fwd {(B, J, I)} and bwd "
                         f"{(B, I, J)}, got {tuple(fwd.shape)}, {tuple(bwd.shape)}")
    fast = (counts.dim() == 2 and counts.shape[1] == 2 and counts.is_contiguous()
            and kernel_ready(counts, ids, (fwd, bwd)))
    if not fast:
        scatter_add_(counts[:, 0], ids.transpose(1, 2), fwd)
        scatter_add_(counts[:, 1], ids, bwd)
        return counts
    bad = _word_slots(counts.numpy(), np.ascontiguousarray(ids.numpy()),
                      np.ascontiguousarray(fwd.numpy()), np.ascontiguousarray(bwd.numpy()))
    if bad >= 0:
        raise ValueError(f"scatter_word_slots_: id {int(bad)} outside [0, {counts.shape[0]})")
    return counts


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
