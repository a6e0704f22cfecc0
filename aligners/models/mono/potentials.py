"""Shared pieces of the token and phrasal CRF aligners: per-pair feature caching, batching,
gold-path constraints and Hamming cost (Yao et al. 2013, 3.1-3.2); the model
(`semicrf.PhraseCRFAligner`) builds its log-potentials from them.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import torch

from aligners.features.monolingual import Embedder, featurize_states
from aligners.lattices.jump_transition import JumpLayout
from aligners.models.mono.states import num_states, state_table

__all__ = ["MonoExample", "MonoBatch", "prepare", "collate", "jump_layout", "links_inside",
           "segment_sums", "N_TRANS"]

# transition buckets: to NULL, from NULL, jumps -4..4, same state, start at 0..4, start NULL
N_TRANS = 18

# Hamming cost given to states that cannot occur (phrases running off the sentence): a large
# finite cost, not a log zero (those states are masked to the semiring zero in `factors`);
# finite so that the segment sums of `segment_sums` never form inf - inf.
_INVALID_COST = 1e4


@dataclass
class MonoExample:
    """One featurised pair. emit (I, Ls, C, F) float16 state-indexed span features;
    null (I, F0); gold (I, J) bool link matrix or None; the neural aligner's encoder word
    vectors src_vec (I, D), tgt_vec (J, D) when computed before its forward pass, else None."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    emit: torch.Tensor
    null: torch.Tensor
    gold: torch.Tensor | None
    src_vec: torch.Tensor | None = None
    tgt_vec: torch.Tensor | None = None


def prepare(src: Sequence[str], tgt: Sequence[str], links=None, *, max_src_len: int,
            max_tgt_len: int, embedder: Embedder | None = None,
            phrase_cues: bool = False) -> MonoExample:
    """Featurise one pair; `links` are 0-based (i, j) source-target pairs (or None).
    Cost: see `aligners.features.monolingual.featurize_states`; memory I*Ls*C*F halves."""
    emit, null = featurize_states(src, tgt, max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                                  embedder=embedder, phrase_cues=phrase_cues)
    I, J = len(src), len(tgt)
    assert emit.shape[2] == num_states(tgt_len=J, max_tgt_len=max_tgt_len)
    gold = None
    if links is not None:
        gold = torch.zeros(I, J, dtype=torch.bool)
        for i, j in links:
            gold[i, j] = True
    return MonoExample(tuple(src), tuple(tgt), emit, null, gold)


@dataclass
class MonoBatch:
    """Padded batch (the features stay on `examples`). null (B,I,F0), valid/gold_ok
    (B,I,Ls,C) bool, cost (B,I,Ls,C), trans_idx (B,C,C) [c_next, c_prev], start_idx (B,C),
    lengths (B,) = I_b+1;
    jump: the same transition buckets as a `JumpLayout` (built on demand: `jump_layout`)."""

    null: torch.Tensor
    valid: torch.Tensor
    trans_idx: torch.Tensor
    start_idx: torch.Tensor
    lengths: torch.Tensor
    cost: torch.Tensor | None
    gold_ok: torch.Tensor | None
    examples: list[MonoExample]
    max_tgt_len: int
    jump: JumpLayout | None = None

    def to(self, device) -> "MonoBatch":
        """The batch with every tensor on `device`, the examples' features included (so
        the emission scores copy nothing per objective evaluation). O(batch size)."""
        def mv(t):
            return None if t is None else t.to(device, non_blocking=True)
        examples = [replace(e, emit=mv(e.emit), null=mv(e.null)) for e in self.examples]
        return MonoBatch(mv(self.null), mv(self.valid), mv(self.trans_idx),
                         mv(self.start_idx), mv(self.lengths), mv(self.cost),
                         mv(self.gold_ok), examples, self.max_tgt_len,
                         None if self.jump is None else self.jump.to(device))


@lru_cache(maxsize=4096)
def _transition_buckets(J: int, Lt: int) -> tuple[torch.Tensor, torch.Tensor]:
    st = state_table(tgt_len=J, max_tgt_len=Lt)
    start, end0, is_null = st["start"], st["end0"], st["length"] == 0
    jump = (start[:, None] - end0[None, :] - 1).clamp(-4, 4) + 6
    trans = torch.where(is_null[:, None], 0, torch.where(is_null[None, :], 1, jump))
    same = torch.eye(len(start), dtype=torch.bool) & ~is_null[:, None]
    trans = torch.where(same, 11, trans)
    first = torch.where(is_null, 17, 12 + start.clamp(0, 4))
    return trans, first


def links_inside(g: torch.Tensor, st: dict[str, torch.Tensor]) -> torch.Tensor:
    """(I, C): how many of word i's links in the (I, J) float matrix `g` fall inside state c's
    target phrase (0 for NULL and invalid states; `st` = `state_table`). O(I * C)."""
    J = g.shape[1]
    cs = torch.cat([torch.zeros(g.shape[0], 1), g.cumsum(1)], 1)
    s0 = st["start"].clamp(min=0)
    inside = cs[:, (s0 + st["length"]).clamp(max=J)] - cs[:, s0]
    return torch.where(st["valid"], inside, torch.zeros_like(inside))


def _gold_tables(ex: MonoExample, Lt: int, fp_cost: float, fn_cost: float):
    """Per-token (I, C) Hamming cost (0 on the cheapest state) and gold-consistency mask."""
    st = state_table(tgt_len=len(ex.tgt), max_tgt_len=Lt)
    g = ex.gold.float()
    inter = links_inside(g, st)
    span, ng = st["length"].float()[None, :], g.sum(1, keepdim=True)
    cost = fp_cost * (span - inter) + fn_cost * (ng - inter)
    cost = torch.where(st["valid"][None, :], cost, torch.full_like(cost, _INVALID_COST))
    cost = cost - cost.amin(1, keepdim=True)
    exact = (inter == span) & (span == ng) & st["valid"][None, :]
    subset = (inter == span) & (span > 0) & st["valid"][None, :]
    representable = exact.any(1, keepdim=True)
    ok = torch.where(representable, exact, subset)
    return cost, ok


def segment_sums(x: torch.Tensor, Ls: int) -> torch.Tensor:
    """(I, C) per-token values -> (I, Ls, C) sums over [n, n+k) (0 past the end)."""
    I = x.shape[0]
    cs = torch.cat([torch.zeros_like(x[:1]), x.cumsum(0)], 0)
    out = torch.zeros(I, Ls, x.shape[1], dtype=x.dtype)
    for k in range(1, Ls + 1):
        if I - k + 1 > 0:
            out[: I - k + 1, k - 1] = cs[k:] - cs[: I - k + 1]
    return out


def collate(examples: list[MonoExample], *, max_tgt_len: int, fp_cost: float = 1.0,
            fn_cost: float = 1.0, nonident_fn_cost: float = 0.0,
            with_gold: bool = True) -> MonoBatch:
    """Pad a list of examples into a MonoBatch (cost/gold_ok only when all have gold); the
    features stay on the examples (the emission scores are computed per example).
    `nonident_fn_cost` is added to the Hamming cost per missed gold link whose two words
    differ (case-folded): a segment labelled with state c costs it for each such link of
    its words outside c's target phrase."""
    B = len(examples)
    Ls = examples[0].emit.shape[1]
    I = max(len(e.src) for e in examples)
    C = max(e.emit.shape[2] for e in examples)
    null = torch.zeros(B, I, examples[0].null.shape[-1])
    valid = torch.zeros(B, I, Ls, C, dtype=torch.bool)
    trans = torch.zeros(B, C, C, dtype=torch.long)
    first = torch.zeros(B, C, dtype=torch.long)
    with_gold = with_gold and all(e.gold is not None for e in examples)
    cost = torch.zeros(B, I, Ls, C) if with_gold else None
    ok = torch.zeros(B, I, Ls, C, dtype=torch.bool) if with_gold else None
    for b, e in enumerate(examples):
        Ib, Cb, J = len(e.src), e.emit.shape[2], len(e.tgt)
        null[b, :Ib] = e.null
        st = state_table(tgt_len=J, max_tgt_len=max_tgt_len)
        ends = torch.arange(Ib)[:, None] + torch.arange(1, Ls + 1)[None, :] <= Ib  # (Ib, Ls)
        v = ends[:, :, None] & st["valid"][None, None, :]
        v[:, 1:, 0] = False  # NULL segments have length 1
        valid[b, :Ib, :, :Cb] = v
        trans[b, :Cb, :Cb], first[b, :Cb] = _transition_buckets(J, max_tgt_len)
        if with_gold:
            c_tok, ok_tok = _gold_tables(e, max_tgt_len, fp_cost, fn_cost)
            cost[b, :Ib, :, :Cb] = segment_sums(c_tok, Ls)
            if nonident_fn_cost:  # recall errors on paraphrase links cost more
                differ = torch.tensor([[s.lower() != t.lower() for t in e.tgt] for s in e.src],
                                      dtype=torch.bool).reshape(Ib, J)
                g = (e.gold & differ).float()  # (I, J) non-identical gold links
                missed = g.sum(1, keepdim=True) - links_inside(g, st)  # (I, C)
                cost[b, :Ib, :, :Cb] += nonident_fn_cost * segment_sums(missed, Ls)
            bad = segment_sums((~ok_tok).float(), Ls)
            ok[b, :Ib, :, :Cb] = (bad == 0) & v
    lengths = torch.tensor([len(e.src) + 1 for e in examples])
    return MonoBatch(null, valid, trans, first, lengths, cost, ok, examples, max_tgt_len)


def jump_layout(batch: MonoBatch) -> JumpLayout:
    """The batch's transition buckets (`_transition_buckets`) as a `JumpLayout` (NULL, then
    target-phrase spans [start, end0]; padding absent), built on first use and kept on the
    batch. O(B * C)."""
    if batch.jump is None:
        B, C = batch.trans_idx.shape[:2]
        kind, start, end = (torch.zeros(B, C, dtype=torch.long) for _ in range(3))
        for b, e in enumerate(batch.examples):
            st = state_table(tgt_len=len(e.tgt), max_tgt_len=batch.max_tgt_len)
            Cb = st["start"].shape[0]
            kind[b, :Cb] = torch.where(st["length"] == 0, 1, 2)
            start[b, :Cb], end[b, :Cb] = st["start"], st["end0"].clamp(min=0)
        batch.jump = JumpLayout.build(kind, start, end, max_jump=4).to(batch.trans_idx.device)
    return batch.jump
