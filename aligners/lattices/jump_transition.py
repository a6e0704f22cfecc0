"""Bucketed jump transitions between span labels for `factored_semimarkov`: the (C, C) label
transition as bucket weights + a bucket function, reduced in O(C * (D + W)) per position.

``kind``, ``start``, ``end`` (B, C) long (kind 0 absent, 1 NULL, 2 a span [start, end],
``0 <= end < P``); ``weights`` (nb,) or (B, nb), bucket ids TO_NULL, FROM_NULL, JUMP0, SAME
= 0, 1, 2, 11. The dense transition (`JumpTransition.dense`,
``[c_next, c_prev]``, D = ``max_jump``):

    trans[c, c'] = weights[TO_NULL]                                  c NULL (any present c')
                 = weights[FROM_NULL]                                c span, c' NULL
                 = weights[SAME]                                     c == c' span
                 = weights[JUMP0 + D + clamp(start[c] - end[c'] - 1, -D, D)]   c, c' spans
                 = semiring zero                                     c or c' absent

The message groups previous spans by end position (prefix / suffix reductions beyond the
window, D + W single positions inside, W = max(D, longest span)). Exact under Log (up to
rounding) and Max (bit-equal). Cost per position O(B * C * (D + W + 4) + B * P * G^2).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._core import semiring_zero

__all__ = ["JumpLayout", "JumpTransition"]


@dataclass(frozen=True)
class JumpLayout:
    """Index tables of one batch of labels (no weights); build with `JumpLayout.build`."""

    kind: torch.Tensor        # (B, C) long: 0 absent, 1 NULL, 2 span
    start: torch.Tensor       # (B, C) long
    end: torch.Tensor         # (B, C) long
    group: torch.Tensor       # (B, P, G) long: spans ending at p (C = the semiring-zero slot)
    index: torch.Tensor       # (B, C, T) long: each message term's slot in the source row
    role: torch.Tensor        # (B, C, T) long: its weight (0..D+W-1 window offset, D+W far
    #                           left, +1 far right, +2 same, +3 from NULL, +4 to NULL; -1 none)
    max_jump: int
    width: int                # W

    @staticmethod
    def build(kind: torch.Tensor, start: torch.Tensor, end: torch.Tensor, *,
              max_jump: int = 4) -> JumpLayout:
        """(B, C) kind / start / end -> layout. O(B * C * (D + W)); raises AlignersInputError
        on a span with end < start or end < 0."""
        if kind.dim() != 2 or start.shape != kind.shape or end.shape != kind.shape:
            raise AlignersInputError(f"kind, start, end must be (B, C), got {tuple(kind.shape)}, "
                                     f"{tuple(start.shape)}, {tuple(end.shape)}")
        if max_jump < 1:
            raise AlignersInputError(f"max_jump must be >= 1, got {max_jump}")
        dev = kind.device
        kind, start, end = kind.long(), start.long(), end.long()
        span = kind == 2
        if bool((span & ((end < start) | (end < 0))).any()):
            raise AlignersInputError("every span label needs 0 <= end and start <= end")
        B, C = kind.shape
        D = int(max_jump)
        longest = int((end - start + 1)[span].max()) if bool(span.any()) else 1
        W = max(D, longest)
        P = int(end[span].max()) + 1 if bool(span.any()) else 1
        # groups: spans sorted by (end, id); g = rank inside the group
        e_key = torch.where(span, end, torch.full_like(end, P))
        order = (e_key * (C + 1) + torch.arange(C, device=dev)).argsort(-1)
        e_sorted = e_key.gather(1, order)
        first = torch.searchsorted(e_sorted.contiguous(), e_sorted.contiguous(), side="left")
        rank = torch.arange(C, device=dev).expand(B, C) - first
        G = int(rank[e_sorted < P].max()) + 1 if bool(span.any()) else 1
        ok = e_sorted < P
        flat = torch.where(ok, e_sorted * G + rank, torch.full_like(rank, P * G))
        group = torch.full((B, P * G + 1), C, dtype=torch.long, device=dev)
        group.scatter_(1, flat, torch.where(ok, order, torch.full_like(order, C)))
        group = group[:, : P * G].view(B, P, G)
        slot = torch.full((B, C), P * G, dtype=torch.long, device=dev)  # p * G + g of each span
        slot.scatter_(1, order, flat)
        # source row (see `JumpTransition.message`): alpha (C) | leave-one-out (P*G) | A (P)
        # | prefix (P) | suffix (P) | NULL | total | semiring zero
        b_loo, b_A = C, C + P * G
        b_pre, b_suf = b_A + P, b_A + 2 * P
        i_null, i_total, i_pad = b_A + 3 * P, b_A + 3 * P + 1, b_A + 3 * P + 2
        Wn = D + W
        offs = torch.arange(Wn, device=dev)
        pos = start[..., None] - D + offs
        win = torch.where((pos >= 0) & (pos < P), b_A + pos.clamp(0, P - 1), i_pad)
        win = torch.where(pos == end[..., None], b_loo + slot[..., None], win)
        lpos, rpos = start - 1 - D, start + W
        far_l = torch.where(lpos >= 0, b_pre + lpos.clamp(0, P - 1), i_pad)
        far_r = torch.where(rpos < P, b_suf + rpos.clamp(0, P - 1), i_pad)
        ids = torch.arange(C, device=dev).expand(B, C)
        index = torch.cat([win, far_l[..., None], far_r[..., None], ids[..., None],
                           torch.full_like(ids, i_null)[..., None]], -1)  # (B, C, Wn + 4)
        role = torch.arange(Wn + 4, device=dev).expand(B, C, Wn + 4)
        null_row = torch.full_like(index, i_pad)
        null_row[..., 0] = i_total
        null_role = torch.full_like(role, -1)
        null_role[..., 0] = Wn + 4
        is_null, absent = (kind == 1)[..., None], (kind == 0)[..., None]
        index = torch.where(is_null, null_row, torch.where(absent, i_pad, index))
        role = torch.where(is_null, null_role, torch.where(absent, -1, role))
        return JumpLayout(kind, start, end, group, index, role, D, W)

    def to(self, device) -> JumpLayout:
        """The layout with every table on `device`."""
        return JumpLayout(**{f.name: (v.to(device) if torch.is_tensor(v) else v)
                             for f in fields(self) for v in [getattr(self, f.name)]})


def _red(x: torch.Tensor, dim: int, reduce_max: bool) -> torch.Tensor:
    return x.amax(dim) if reduce_max else torch.logsumexp(x, dim)


TO_NULL, FROM_NULL, JUMP0, SAME = 0, 1, 2, 11  # bucket ids of the weights (docstring)


@dataclass(frozen=True)
class JumpTransition:
    """Bucket weights + the bucket function of a `JumpLayout` (module docstring)."""

    weights: torch.Tensor     # (nb,) or (B, nb)
    layout: JumpLayout

    @property
    def shape(self) -> tuple[int, int, int]:
        B, C = self.layout.kind.shape
        return (B, C, C)

    def _w(self) -> torch.Tensor:
        B = self.layout.kind.shape[0]
        return self.weights if self.weights.dim() == 2 else self.weights.expand(B, -1)

    def _rows(self, c_next: torch.Tensor) -> torch.Tensor:
        """(B, R) labels -> (B, R, C) transition scores into each from every c' (the
        semiring zero where either is absent). O(B * R * C)."""
        L, D = self.layout, self.layout.max_jump
        kn, sn = L.kind.gather(1, c_next)[..., None], L.start.gather(1, c_next)[..., None]
        kp, ep = L.kind[:, None, :], L.end[:, None, :]  # (B, 1, C)
        same = c_next[..., None] == torch.arange(L.kind.shape[1], device=c_next.device)
        out = JUMP0 + D + (sn - ep - 1).clamp(-D, D)
        out = torch.where(kp == 1, FROM_NULL, out)
        out = torch.where(same & (kn == 2), SAME, out)
        out = torch.where(kn == 1, TO_NULL, out)
        bucket = torch.where((kn == 0) | (kp == 0), -1, out).flatten(1)
        w = self._w()
        vals = w.gather(1, bucket.clamp(min=0))
        zero = torch.full_like(vals, semiring_zero(w.dtype))
        return torch.where(bucket >= 0, vals, zero).view(out.shape)

    def dense(self) -> torch.Tensor:
        """The (B, C, C) [c_next, c_prev] transition this stands for. O(B * C^2)."""
        B, C = self.layout.kind.shape
        return self._rows(torch.arange(C, device=self.layout.kind.device).expand(B, C))

    def row(self, c_next: torch.Tensor) -> torch.Tensor:
        """(B,) labels -> (B, C) transition scores into each from every c'. O(B * C)."""
        return self._rows(c_next.long()[:, None])[:, 0]

    @functools.cached_property
    def _term_weights(self) -> torch.Tensor:
        """(B, C, T) weight of each message term (0 where none); once per transition."""
        L, D = self.layout, self.layout.max_jump
        Wn = D + L.width
        offs = torch.arange(Wn, device=L.role.device)
        bucket = torch.cat([JUMP0 + D + (D - 1 - offs).clamp(-D, D),
                            torch.tensor([JUMP0 + 2 * D, JUMP0, SAME, FROM_NULL, TO_NULL],
                                         device=offs.device)])
        w = self._w()
        B, C, T = L.role.shape
        idx = bucket[L.role.clamp(min=0)].view(B, C * T)
        vals = w.gather(1, idx).view(B, C, T)
        return torch.where(L.role >= 0, vals, torch.zeros_like(vals))

    def message(self, alpha: torch.Tensor, *, reduce_max: bool = False) -> torch.Tensor:
        """alpha (B, C) -> (B, C) m[c] = (+)_{c'} alpha[c'] (x) trans[c, c'] under Log
        (reduce_max=False) or Max: one source row per batch item (alpha, the leave-one-out
        and full (+) of each end position's group, their prefix and suffix (+), NULL, total),
        then ONE gather of (B, C, D + W + 4) terms and one reduction.
        O(B * (C * (D + W + 4) + P * G^2))."""
        L = self.layout
        B, C = alpha.shape
        P, G = L.group.shape[1], L.group.shape[2]
        zero = semiring_zero(alpha.dtype)
        pad = alpha.new_full((B, 1), zero)
        grouped = torch.cat([alpha, pad], 1).gather(1, L.group.view(B, P * G)).view(B, P, G)
        A = _red(grouped, -1, reduce_max)  # (B, P)
        eye = torch.eye(G, dtype=torch.bool, device=alpha.device)
        loo = _red(grouped[:, :, None, :].masked_fill(eye, zero), -1, reduce_max)  # (B, P, G)
        both = torch.cat([A, A.flip(-1)], 0)
        both = both.cummax(-1).values if reduce_max else both.logcumsumexp(-1)
        pre, suf = both[:B], both[B:].flip(-1)
        from_null = _red(alpha.masked_fill(L.kind != 1, zero), -1, reduce_max)[:, None]
        total = _red(torch.cat([pre[:, -1:], from_null], 1), -1, reduce_max)[:, None]
        source = torch.cat([alpha, loo.view(B, P * G), A, pre, suf, from_null, total, pad], 1)
        T = L.index.shape[-1]
        terms = source.gather(1, L.index.view(B, C * T)).view(B, C, T)
        return _red(terms + self._term_weights.to(alpha.dtype), -1, reduce_max)
