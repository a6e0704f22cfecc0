"""Per-batch constants of the phrasal aligner's E-step, built once per batch and reused by
every EM iteration (issue 10: speed).

Only the emission tables change between iterations (the word HMM's jump weights are kept
fixed, sec. 7.1): the routing split, the phrase layout, every table slot looked up for the
batch (word pairs, listed target / source phrases, phrase states), the transition
potentials, the sparse long-segment rows and the index maps of the agreement are fixed.
`prepare_batch` builds them; `PhrasalAligner.accumulate` and `.link_posteriors` take the
result. Shapes per direction (S = state length, O = observation length, P phrase states,
M listed long segments): see `DirectionConst`. Cost of building: O(B (S O + O L + P O)
log Q); memory O(B S O) int32 + O(B (S^2 + O P) + M S) per phrase-row batch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from aligners.data.bitext import Batch
from aligners.models.gappy_hsmm.routing import phrase_rows, take_layout, take_rows
from aligners.models.hmm.directional import _jump_scores
from aligners.semirings import semiring_zero

__all__ = ["DirectionConst", "PreparedBatch", "ReuseCache", "REUSE_BYTES", "direction_const",
           "prepare_batch", "jump_potentials", "tensor_bytes"]

_TINY = 1e-20
REUSE_BYTES = 1 << 29  # bytes of per-batch constants kept for reuse, per cache (prepared, layouts)


def tensor_bytes(obj, seen: set | None = None) -> int:
    """Bytes of the tensor storages reachable from `obj` (tensors, tuples / lists / dicts,
    dataclasses), each storage counted once."""
    seen = set() if seen is None else seen
    if isinstance(obj, torch.Tensor):
        st = obj.untyped_storage()
        if st.data_ptr() in seen:
            return 0
        seen.add(st.data_ptr())
        return st.nbytes()
    if isinstance(obj, dict):
        obj = list(obj.values())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(x, seen) for x in obj)
    return 0


class ReuseCache(dict):
    """Batch number -> a per-batch constant kept for the next EM iteration (a
    `PreparedBatch`, a `CompactLayout`), holding at most `budget` bytes of tensors in all.
    `put` keeps a value while it fits (else it is dropped and rebuilt when next needed: the
    same values, more time), so memory is O(budget) instead of O(corpus); `pop` gives the
    bytes back."""

    def __init__(self, budget: int = REUSE_BYTES):
        super().__init__()
        self.budget, self.used = int(budget), 0

    def put(self, k: int, value):
        """Keep `value` under `k` if it fits the budget; returns `value` either way."""
        n = tensor_bytes(value)
        if k not in self and self.used + n <= self.budget:
            self[k] = value
            self.used += n
        return value

    def pop(self, k, default=None):
        if k not in self:
            return default
        value = super().pop(k)
        self.used -= tensor_bytes(value)
        return value

    def clear(self) -> None:
        super().clear()
        self.used = 0


class DirectionConst(NamedTuple):
    """One direction's fixed part (small: O(B (S + O P) + M S); the (B,O,S) word slots are
    the phrase rows' pair ids, gathered per use, and the (B,S,S) jumps are recomputed per
    use by `jump_potentials`; the (B,P,S) memberships are kept, `members` / `gends`, in the
    model's dtype: `_members`). seg_item, seg_end, seg_len (M,)
    the listed observation spans (order of `span.nonzero()`); ids_s (M,S) int32 their slots
    per state word; seg_lam (M,1) l log(lambda); ids_p (B,O,P) int32 phrase-state slots; obs
    (B,O) int32 observation words; jump_norm (B,S+1) the jump normalisers; null_init, null_stay
    (B,S), phrase_weight (B,P) log potentials; first, last, gap (B,P) phrase states (-1
    pad); mirror (M,) the other direction's phrase column that is each segment's span;
    partner (B,P) the other direction's segment row of each contiguous phrase state (-1
    none); cover: [(flat (B*O) positions, segment rows)] per (extra length l, offset k) in
    that order, each position once; forward: the direction."""

    seg_item: torch.Tensor
    seg_end: torch.Tensor
    seg_len: torch.Tensor
    ids_s: torch.Tensor
    seg_lam: torch.Tensor
    ids_p: torch.Tensor
    obs: torch.Tensor
    jump_norm: torch.Tensor
    null_init: torch.Tensor
    null_stay: torch.Tensor
    phrase_weight: torch.Tensor
    first: torch.Tensor
    last: torch.Tensor
    gap: torch.Tensor
    mirror: torch.Tensor
    partner: torch.Tensor
    cover: list
    state_lengths: torch.Tensor
    obs_lengths: torch.Tensor
    forward: bool
    members: torch.Tensor  # (B,P,S) `_members` in the model's dtype
    gends: torch.Tensor  # (B,P,S) gappy ends, likewise


@dataclass
class PreparedBatch:
    """A batch split by routing: word_rows (R,) long or None (rows for the word HMM
    lattice), phrase_rows (R',) long or None (None: every row is a phrase row when fwd is
    set), fwd / bwd the phrase rows' DirectionConst (None: no phrase row). The sub-batches
    are taken again per use (`phrase_batch`; O(R I J) copies, not kept)."""

    batch: Batch
    word_rows: torch.Tensor | None
    phrase_rows: torch.Tensor | None
    fwd: DirectionConst | None
    bwd: DirectionConst | None

    def phrase_batch(self) -> Batch | None:
        """The phrase rows' sub-batch (trimmed), or None."""
        if self.fwd is None:
            return None
        return self.batch if self.phrase_rows is None else take_rows(self.batch,
                                                                     self.phrase_rows)


def _jump_weights(jw, sl, S, dtype):
    valid = torch.arange(S, device=sl.device)[None, :] < sl[:, None]
    return _jump_scores(jw, n_src=S, dtype=dtype)[None] * valid[:, None], valid


def jump_potentials(model, d: DirectionConst):
    """(log_jump_init (B,S), log_jump (B,S,S)) of one direction: the fixed word-HMM jump
    weights s(w) over the stored normalisers. O(B S^2)."""
    c, dtype = model.config, model.t_fwd.dtype
    w, valid = _jump_weights(model.jump_fwd if d.forward else model.jump_bwd, d.state_lengths,
                             d.null_stay.shape[1], dtype)
    # in place on the fresh (B,S+1,S) tensor w: the same operations and values as
    # log(((1 - p0) eta w / Z).clamp_min(tiny)) masked by `valid`, without temporaries
    lj = w.mul_((1 - c.p0) * c.eta).div_(d.jump_norm.clamp_min(_TINY)[..., None])
    lj = lj.clamp_min_(_TINY).log_().masked_fill_(~valid[:, None, :], semiring_zero(dtype))
    return lj[:, 0], lj[:, 1:]


def _members(first, last, gap, n, dtype):
    """(B,P,n) membership: a contiguous phrase's words, a gappy one's two ends; and the
    gappy ends alone."""
    ar = torch.arange(n, device=first.device)
    valid = first >= 0
    contig = (ar >= first[..., None]) & (ar <= last[..., None]) & (gap[..., None] <= 0)
    ends = ((ar == first[..., None]) | (ar == last[..., None])) & (gap[..., None] > 0)
    g = (first >= 0) & (gap > 0)
    gends = (((ar == first[..., None]) & g[..., None]).to(dtype)
             + ((ar == last[..., None]) & g[..., None]).to(dtype))
    return ((contig | ends) & valid[..., None]).to(dtype), gends


def _cover(item, end, ln, O, L):
    """Per (extra length l, offset k), in that order: (flat positions b*O + end - k,
    segment rows) of the segments of extra length l; a position occurs once per group."""
    out = []
    for length in range(1, L):
        rows = (ln == length).nonzero()[:, 0]
        if rows.numel() == 0:
            continue
        for k in range(length + 1):
            out.append((item[rows] * O + end[rows] - k, rows))
    return out


def direction_const(model, batch: Batch, lay, *, forward: bool) -> DirectionConst:
    """The fixed part of one direction of `batch` (phrase rows) under `model`."""
    c = model.config
    L = c.max_phrase_len
    if forward:
        st, ob, sl, ol = batch.src, batch.tgt, batch.src_lengths, batch.tgt_lengths
        span, ph, jw = lay.span_tgt, lay.ph_fwd, model.jump_fwd
        other_span, other_state = lay.span_src, lay.span_state_tgt
    else:
        st, ob, sl, ol = batch.tgt, batch.src, batch.tgt_lengths, batch.src_lengths
        span, ph, jw = lay.span_src, lay.ph_bwd, model.jump_bwd
        other_span, other_state = lay.span_tgt, lay.span_state_src
    B, S = st.shape
    O = ob.shape[1]
    dtype, dev = model.t_fwd.dtype, model.t_fwd.device

    def key(state_unit, obs_unit):
        return (model.phrase_ids(state_unit, obs_unit) if forward
                else model.phrase_ids(obs_unit, state_unit))

    hb, hn, hl = (span >= 0).nonzero(as_tuple=True)  # listed observation phrases (l >= 1)
    ids_s = key(st[hb].long(), span[hb, hn, hl][:, None].expand(-1, S))  # (M, S)
    seg_lam = hl[:, None].to(dtype) * torch.log(torch.tensor(c.lam, dtype=dtype))
    first, last, unit, gap = ph
    ids_p = key(unit[:, None, :].expand(B, O, -1), ob.long()[:, :, None].expand(
        -1, -1, unit.shape[1]))
    # transitions: fixed word-HMM jump weights, eta per covered state word
    w, valid = _jump_weights(jw, sl, S, dtype)
    n_words = torch.where(gap > 0, 2, last - first + 1).clamp_min(1)
    pvalid = first >= 0
    pw = torch.where(pvalid, torch.tensor(c.eta, dtype=dtype) ** (n_words - 1).to(dtype),
                     torch.zeros((), dtype=dtype))
    to_phrase = w.gather(2, first.clamp_min(0)[:, None, :].expand(-1, S + 1, -1))
    Z = (w.sum(-1) + (to_phrase * pw[:, None, :]).sum(-1)) * c.eta  # (B, S+1)
    null_init = torch.log(c.p0 / sl.to(dtype))[:, None].expand(B, S).contiguous()
    null_stay = torch.full((B, S), math.log(c.p0), dtype=dtype, device=dev)
    lpw = torch.where(pvalid, torch.log(pw.clamp_min(_TINY)),
                      torch.full((), semiring_zero(dtype), dtype=dtype, device=dev))
    # agreement maps: mirror phrase column of each segment; segment row of each of this
    # direction's contiguous phrase states among the other direction's segments
    mirror = other_state[hb, hn, hl]
    ob_b, ob_n, ob_l = (other_span >= 0).nonzero(as_tuple=True)
    at = torch.full(other_span.shape, -1, dtype=torch.long, device=dev)
    at[ob_b, ob_n, ob_l] = torch.arange(ob_b.numel(), device=dev)
    f, la = first.clamp_min(0), last.clamp_min(0)
    ln = (la - f).clamp(0, at.shape[2] - 1)
    bidx = torch.arange(B, device=dev)[:, None]
    partner = torch.where(pvalid & (gap <= 0), at[bidx, la, ln], torch.full_like(first, -1))
    return DirectionConst(hb, hn, hl, ids_s.int(), seg_lam, ids_p.int(), ob.int(), Z, null_init,
                          null_stay, lpw, first, last, gap, mirror, partner,
                          _cover(hb, hn, hl, O, L), sl, ol, forward,
                          *_members(first, last, gap, S, dtype))


def prepare_batch(model, batch: Batch, lay) -> PreparedBatch:
    """The batch's fixed E-step parts (`PhrasalAligner.prepare`): `batch` split (routing:
    rows without a phrase state go to the word HMM) and the phrase rows' `DirectionConst`s.
    Build once per batch, pass to `accumulate` and `link_posteriors` in every iteration;
    valid while the phrase lists, keys, jump weights and config are unchanged."""
    batch = batch.to(model.word_keys.device)
    word_rows = prows = None
    pb, play, has = batch, lay, phrase_rows(lay)
    if not bool(has.all()):
        word_rows = (~has).nonzero()[:, 0]
        if not bool(has.any()):
            return PreparedBatch(batch, word_rows, None, None, None)
        prows = has.nonzero()[:, 0]
        pb = take_rows(batch, prows)
        play = take_layout(lay, prows, pb.src.shape[1], pb.tgt.shape[1])
    return PreparedBatch(batch, word_rows, prows,
                         direction_const(model, pb, play, forward=True),
                         direction_const(model, pb, play, forward=False))
