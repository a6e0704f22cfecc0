"""Phrasal / gappy hidden semi-Markov alignment lattice (Bansal, Quirk & Moore 2011, sec. 2.2).

One direction: I source words generate J target words. States: word i (emits a target
segment of length 1..L), NULL r (Och-Ney, remembers position r; one word), phrase p (a
contiguous or gappy source phrase phrase_first[p]..phrase_last[p]; one word). Transitions
from the last position k of the previous state: into word i ``log_jump[k, i]``, into phrase p
``log_jump[k, first_p] + log_phrase_weight[p]``, into NULL r ``log_null_stay[r]`` if r == k
(from the start: ``log_jump_init``, ``log_null_init``). Emissions: ``log_emit_word (B,J,L,I)``
``[b,n,l,i]`` (segment ending at n of length l+1; l > n never read), ``log_emit_null (B,J)``,
``log_emit_phrase (B,J,P)``. Padding: source positions >= src_lengths, phrases with
phrase_first < 0, target positions >= tgt_lengths.

Cost O(B J (I^2 + L I + P I)) time. log Z runs scaled in probability space, the "max"
semiring (Viterbi, by autograd) in log space. Posteriors: on CPU the numba
forward-backward on the sparse form (`_phrasal_hsmm_kernel`), elsewhere autograd of log Z.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._phrasal_hsmm_kernel import _NEG, phrasal_forward_backward
from aligners.semirings import semiring_zero

__all__ = [
    "PhrasalPotentials",
    "PhrasalPosteriors",
    "SparsePhrasalPotentials",
    "SparsePhrasalPosteriors",
    "check_dense",
    "phrasal_hsmm_log_partition",
    "phrasal_hsmm_posteriors",
    "phrasal_hsmm_viterbi",
    "sparse_posteriors_to_dense",
    "to_dense",
    "to_sparse",
]


class PhrasalPotentials(NamedTuple):
    """Log-potentials of one direction (see the module docstring for the meaning)."""

    log_emit_word: torch.Tensor  # (B, J, L, I)
    log_emit_null: torch.Tensor  # (B, J)
    log_emit_phrase: torch.Tensor  # (B, J, P)
    log_jump_init: torch.Tensor  # (B, I)
    log_jump: torch.Tensor  # (B, I, I) [k, i]: last position k -> first position i
    log_null_init: torch.Tensor  # (B, I)
    log_null_stay: torch.Tensor  # (B, I)
    log_phrase_weight: torch.Tensor  # (B, P)
    phrase_first: torch.Tensor  # (B, P) long, -1 = padding
    phrase_last: torch.Tensor  # (B, P) long


class PhrasalPosteriors(NamedTuple):
    """log_likelihood (B,); word (B,J,L,I), null (B,J), phrase (B,J,P): marginal
    probability of each segment (same indexing as the emissions). Under "max" the same
    tensors are the 0/1 indicators of the best structure and log_likelihood its score."""

    log_likelihood: torch.Tensor
    word: torch.Tensor
    null: torch.Tensor
    phrase: torch.Tensor


def check_dense(pot: PhrasalPotentials, src_lengths, tgt_lengths):
    """(src_lengths, tgt_lengths) as long tensors on the potentials' device after checking
    every shape against log_emit_word (B,J,L,I); AlignersInputError otherwise."""
    if not isinstance(pot, PhrasalPotentials):
        raise AlignersInputError("expected a PhrasalPotentials tuple")
    ew = pot.log_emit_word
    if ew.dim() != 4:
        raise AlignersInputError(f"log_emit_word: expected (B,J,L,I), got {tuple(ew.shape)}")
    B, J, L, I = ew.shape
    P = pot.log_emit_phrase.shape[-1]
    want = {
        "log_emit_null": (B, J), "log_emit_phrase": (B, J, P), "log_jump_init": (B, I),
        "log_jump": (B, I, I), "log_null_init": (B, I), "log_null_stay": (B, I),
        "log_phrase_weight": (B, P), "phrase_first": (B, P), "phrase_last": (B, P),
    }
    for name, shape in want.items():
        got = tuple(getattr(pot, name).shape)
        if got != shape:
            raise AlignersInputError(f"{name}: expected shape {shape}, got {got}")
    sl, tl = src_lengths.to(ew.device).long(), tgt_lengths.to(ew.device).long()
    if sl.shape != (B,) or tl.shape != (B,):
        raise AlignersInputError("src_lengths and tgt_lengths must have shape (B,)")
    if B and (int(sl.min()) < 1 or int(sl.max()) > I or int(tl.min()) < 1 or int(tl.max()) > J):
        raise AlignersInputError(f"lengths must lie in 1..I={I} (source), 1..J={J} (target)")
    return sl, tl


def _span_table(ew: torch.Tensor) -> list:
    """[n][k-1]: whether any item scores a segment of length k+1 ending at n above the
    semiring zero (segments never scored are skipped: exact, and the usual case)."""
    return (ew[:, :, 1:].detach() > semiring_zero(ew.dtype) / 2).any(3).any(0).tolist()


def _max_forward(pot: PhrasalPotentials, sl, tl) -> torch.Tensor:
    """The best score (B,) in log space (the "max" semiring), differentiable in every
    potential (its gradient: the best structure's indicators)."""
    ew = pot.log_emit_word
    B, J, L, I = ew.shape
    dtype, dev = ew.dtype, ew.device
    zero = semiring_zero(dtype)
    ivalid, pvalid, first, plast = _valid(pot, sl)
    z = torch.full((), zero, dtype=dtype, device=dev)
    jump = torch.where(ivalid[:, None, :] & ivalid[:, :, None], pot.log_jump, z)
    pw = torch.where(pvalid, pot.log_phrase_weight, z)
    last_hot = torch.where(  # (B, P, I): 0 at the phrase's last position, zero elsewhere
        torch.arange(I, device=dev)[None, None, :] == plast.clamp(0, I - 1)[:, :, None], 0.0, z)
    null_stay = torch.where(ivalid, pot.log_null_stay, z)

    def enter(R):  # entry scores of words, phrases (given R (B,I) per first position)
        return R, R.gather(1, first) + pw

    pre_w, pre_p = enter(torch.where(ivalid, pot.log_jump_init, z))
    pre_ws, pre_n, pre_ps = [pre_w], torch.where(ivalid, pot.log_null_init, z), pre_p
    # per-step views made once: slicing inside the loop would make autograd allocate a
    # full-size zero gradient per step
    ew_n = [e.unbind(1) for e in ew.unbind(1)]  # [n][k] (B, I)
    spans = _span_table(ew)
    en_n = pot.log_emit_null.unbind(1)
    ep_n = pot.log_emit_phrase.unbind(1)
    stops = set((tl - 1).tolist())  # positions where some item ends
    logz = torch.full((B,), zero, dtype=dtype, device=dev)
    for n in range(J):
        ks = [0] + [k for k in range(1, min(L, n + 1)) if spans[n][k - 1]]
        if len(ks) == 1:
            w = pre_ws[n] + ew_n[n][0]
        else:
            w = torch.stack([pre_ws[n - k] + ew_n[n][k] for k in ks], 1).amax(1)
        nu = pre_n + en_n[n][:, None]
        ph = pre_ps + ep_n[n]
        if n in stops:
            logz = torch.where(tl - 1 == n, torch.cat([w, nu, ph], 1).amax(1), logz)
        if n == J - 1:
            break
        M = torch.stack([w, nu], 1).amax(1)
        if ph.shape[1]:
            M = torch.stack([M, (ph[:, :, None] + last_hot).amax(1)], 1).amax(1)
        M = torch.where(ivalid, M, z)
        R = torch.where(ivalid, (M[:, :, None] + jump).amax(1), z)
        pre_w, pre_ps = enter(R)
        pre_ws.append(pre_w)
        pre_n = M + null_stay
    return logz


def _valid(pot: PhrasalPotentials, sl):
    """ivalid (B,I) real source positions, pvalid (B,P) real phrases, their first positions
    (B,P) clamped into 0..I-1, and their last positions (B,P) long."""
    I = pot.log_emit_word.shape[-1]
    ivalid = torch.arange(I, device=sl.device)[None, :] < sl[:, None]  # (B, I)
    pfirst, plast = pot.phrase_first.long(), pot.phrase_last.long()
    pvalid = (pfirst >= 0) & (plast < sl[:, None]) & (pfirst <= plast)  # (B, P)
    return ivalid, pvalid, pfirst.clamp(0, I - 1), plast


def _exp0(x: torch.Tensor) -> torch.Tensor:
    """exp(x), exactly 0 for arguments below 0.9 log(tiny) (-78.6 in float32: relative
    masses under 1e-34 are dropped). On CPU, exp of arguments near or below log(tiny) (the
    semiring zero: most segment scores) takes a slow path, 30-100x a normal argument."""
    lo = 0.9 * math.log(torch.finfo(x.dtype).tiny)
    return torch.where(x >= lo, torch.exp(x.clamp_min(lo)), torch.zeros((), dtype=x.dtype,
                                                                      device=x.device))


def _mask_shift(x, mask, dim):
    """(exp(x - m) zeroed where ~mask, the shift m): m the max of x over `dim` where `mask`
    (detached; 0 where there is none)."""
    if not x.shape[dim]:
        return torch.zeros_like(x), x.new_zeros(x.shape[:dim] + x.shape[dim + 1:])
    m = torch.where(mask, x.detach(), float("-inf")).amax(dim=dim)
    m = torch.where(torch.isfinite(m), m, 0.0)
    return torch.where(mask, _exp0(x - m.unsqueeze(dim)), 0.0), m


def _scaled_emissions(pot: PhrasalPotentials, ivalid, pvalid):
    """(em (B,J), word [n] (B,I), {(n, k): segment (B,I)}, NULL [n] (B,), phrase [n] (B,P)):
    the emission probabilities with one shift em per (item, position) over its readable
    scores (valid states; segments of length > 1 only where some item scores one, gathered
    once: autograd scatters back once)."""
    ew = pot.log_emit_word
    B, J, L, _ = ew.shape
    ninf = torch.full((), float("-inf"), dtype=ew.dtype, device=ew.device)
    spans = _span_table(ew)
    used = [(n, k) for n in range(J) for k in range(1, min(L, n + 1)) if spans[n][k - 1]]
    em = torch.where(ivalid[:, None, :], ew.detach()[:, :, 0], ninf).amax(2)  # (B, J)
    if used:
        un = torch.tensor([n for n, _ in used], device=ew.device)
        uk = torch.tensor([k for _, k in used], device=ew.device)
        seg = torch.where(ivalid[:, None, :], ew.detach()[:, un, uk], ninf).amax(2)  # (B, U)
        em = em.scatter_reduce(1, un.expand(B, -1), seg, "amax")
    em = torch.maximum(em, pot.log_emit_null.detach())
    if pot.log_emit_phrase.shape[-1]:
        em = torch.maximum(em, torch.where(pvalid[:, None, :], pot.log_emit_phrase.detach(),
                                           ninf).amax(2))
    em = torch.where(torch.isfinite(em), em, torch.zeros_like(em))
    Ew0 = _exp0(ew[:, :, 0] - em[:, :, None]).unbind(1)  # views made once
    Eseg = dict(zip(used, _exp0(ew[:, un, uk] - em[:, un, None]).unbind(1))) if used else {}
    En = _exp0(pot.log_emit_null - em).unbind(1)
    Ep = _exp0(pot.log_emit_phrase - em[:, :, None]).unbind(1)
    return em, Ew0, Eseg, En, Ep


def _scaled_forward(pot: PhrasalPotentials, sl, tl) -> torch.Tensor:
    """log Z (B,) by a scaled forward in probability space (per-step normalisation,
    (B,I)x(B,I,I) products; no per-element logs): differentiable, much cheaper to
    back-propagate than a log-space forward."""
    ew = pot.log_emit_word
    B, J, L, I = ew.shape
    P = pot.log_emit_phrase.shape[-1]
    dtype, dev = ew.dtype, ew.device
    tiny = torch.finfo(dtype).tiny
    ivalid, pvalid, first, plast = _valid(pot, sl)
    last_hot = ((torch.arange(I, device=dev)[None, None, :] == plast.clamp(0, I - 1)[..., None])
                & pvalid[..., None]).to(dtype)  # (B, P, I)
    # the jump probabilities A (B,I,I), each row shifted by its maximum over valid states;
    # the row shifts go into the exit masses: row_f (B,I) <= 1 and ma (B,)
    A, row = _mask_shift(pot.log_jump, ivalid[:, None, :] & ivalid[:, :, None], 2)
    ma = row.amax(1)
    row_f = torch.exp(row - ma[:, None])
    A0, ma0 = _mask_shift(pot.log_jump_init, ivalid, 1)
    NS, mn = _mask_shift(pot.log_null_stay, ivalid, 1)
    N0, mn0 = _mask_shift(pot.log_null_init, ivalid, 1)
    PW, mp = _mask_shift(pot.log_phrase_weight, pvalid, 1)
    em, Ew0, Eseg, En, Ep = _scaled_emissions(pot, ivalid, pvalid)

    def normalise(w, p, nu, shift):
        """Scale the entry masses by one per-item factor; returns them and their log scale."""
        z = (w.sum(1) + p.sum(1) + nu.sum(1)).clamp_min(tiny)
        return w / z[:, None], p / z[:, None], nu / z[:, None], shift + torch.log(z)

    # entry masses of the first state, relative to a common shift per item
    top = torch.maximum(ma0 + torch.maximum(mp, torch.zeros_like(mp)), mn0)
    w0 = A0 * torch.exp(ma0 - top)[:, None]
    p0 = w0.gather(1, first) * PW * torch.exp(mp)[:, None] if P else w0[:, :0]
    n0 = N0 * torch.exp(mn0 - top)[:, None]
    w0, p0, n0, c0 = normalise(w0, p0, n0, top)
    pre_ws, pre_p, pre_n, cs = [w0], p0, n0, [c0]
    stops = set((tl - 1).tolist())
    logz = torch.zeros(B, dtype=dtype, device=dev)
    for n in range(J):
        kk = min(L, n + 1)
        D = torch.stack([cs[n - k] for k in range(kk)], 1)  # (B, kk) log scales
        dmax = D.detach().amax(1)
        f = torch.exp(D - dmax[:, None])
        w = pre_ws[n] * Ew0[n] * f[:, :1]
        for k in range(1, kk):
            if (n, k) in Eseg:  # some item has a segment of length k+1 ending at n
                w = w + pre_ws[n - k] * Eseg[n, k] * f[:, k:k + 1]
        nu = pre_n * En[n][:, None] * f[:, :1]
        ph = pre_p * Ep[n] * f[:, :1]
        g = dmax + em[:, n]
        if n in stops:
            tot = (w.sum(1) + nu.sum(1) + ph.sum(1)).clamp_min(tiny)
            logz = torch.where(tl - 1 == n, torch.log(tot) + g, logz)
        if n == J - 1:
            break
        M = w + nu
        if P:
            M = M + torch.bmm(ph[:, None, :], last_hot)[:, 0]
        R = torch.bmm((M * row_f)[:, None, :], A)[:, 0]
        top = torch.maximum(ma + torch.maximum(mp, torch.zeros_like(mp)), mn)
        nw = R * torch.exp(ma - top)[:, None]
        np_ = nw.gather(1, first) * PW * torch.exp(mp)[:, None] if P else nw[:, :0]
        nn_ = M * NS * torch.exp(mn - top)[:, None]
        nw, pre_p, pre_n, c = normalise(nw, np_, nn_, g + top)
        pre_ws.append(nw)
        cs.append(c)
    return logz


def phrasal_hsmm_log_partition(pot: PhrasalPotentials, *, src_lengths: torch.Tensor,
                               tgt_lengths: torch.Tensor) -> torch.Tensor:
    """(B,) log partition; differentiable (the best score: `phrasal_hsmm_viterbi`).

    Shapes as `PhrasalPotentials`; cost O(B J (I^2 + L I + P I)) time.
    """
    sl, tl = check_dense(pot, src_lengths, tgt_lengths)
    return _scaled_forward(pot, sl, tl)


def _grad_marginals(pot, sl, tl, forward) -> PhrasalPosteriors:
    """Gradients of `forward` (log Z or the best score) w.r.t. the three emission tensors."""
    with torch.enable_grad():
        leaves = [x.detach().requires_grad_(True) for x in pot[:3]]
        rest = [x.detach() for x in pot[3:]]
        logz = forward(PhrasalPotentials(*leaves, *rest), sl, tl)
        if leaves[0].numel() == 0:
            return PhrasalPosteriors(logz.detach(), *(torch.zeros_like(x) for x in leaves))
        grads = torch.autograd.grad(logz.sum(), leaves, allow_unused=True)
    grads = [torch.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]
    return PhrasalPosteriors(logz.detach(), *grads)


def phrasal_hsmm_posteriors(pot: PhrasalPotentials, *, src_lengths: torch.Tensor,
                            tgt_lengths: torch.Tensor) -> PhrasalPosteriors:
    """Segment marginals = d log Z / d log-emissions. Shapes: see `PhrasalPosteriors`.

    CPU tensors: the explicit scaled forward-backward per item (numba, `_phrasal_hsmm_kernel`),
    O(B J (I^2 + L I + P)); other devices: autograd of the scaled forward (two passes of
    `phrasal_hsmm_log_partition`). Tested equal.
    """
    sl, tl = check_dense(pot, src_lengths, tgt_lengths)
    if pot.log_emit_word.device.type != "cpu":
        return _grad_marginals(pot, sl, tl, _scaled_forward)
    spot = to_sparse(pot)  # the listed (scored) long segments only; exact
    post = SparsePhrasalPosteriors(*phrasal_forward_backward(spot, sl, tl,
                                                             pot.log_emit_word.shape[2]))
    return sparse_posteriors_to_dense(post, spot, pot.log_emit_word.shape[2])


def phrasal_hsmm_viterbi(pot: PhrasalPotentials, *, src_lengths: torch.Tensor,
                         tgt_lengths: torch.Tensor) -> PhrasalPosteriors:
    """Best structure as 0/1 segment indicators (gradient of the max-semiring score; exact
    ties split their mass). Shapes: see `PhrasalPosteriors`. Cost as the posteriors."""
    sl, tl = check_dense(pot, src_lengths, tgt_lengths)
    return _grad_marginals(pot, sl, tl, _max_forward)


class SparsePhrasalPotentials(NamedTuple):
    """Log-potentials of one direction with sparse long segments (see `phrasal_hsmm_sparse`)."""

    log_emit_word: torch.Tensor  # (B, J, I) one-word segments
    seg_item: torch.Tensor  # (M,) long, sorted
    seg_end: torch.Tensor  # (M,) long
    seg_len: torch.Tensor  # (M,) long, extra length l >= 1
    log_emit_seg: torch.Tensor  # (M, I)
    log_emit_null: torch.Tensor  # (B, J)
    log_emit_phrase: torch.Tensor  # (B, J, P)
    log_jump_init: torch.Tensor  # (B, I)
    log_jump: torch.Tensor  # (B, I, I)
    log_null_init: torch.Tensor  # (B, I)
    log_null_stay: torch.Tensor  # (B, I)
    log_phrase_weight: torch.Tensor  # (B, P)
    phrase_first: torch.Tensor  # (B, P) long, -1 = padding
    phrase_last: torch.Tensor  # (B, P) long


class SparsePhrasalPosteriors(NamedTuple):
    """log_likelihood (B,); word (B,J,I) one-word segments; seg (M,I) the listed longer
    segments (rows as the potentials'); null (B,J); phrase (B,J,P). Under Viterbi the 0/1
    indicators of the best structure."""

    log_likelihood: torch.Tensor
    word: torch.Tensor
    seg: torch.Tensor
    null: torch.Tensor
    phrase: torch.Tensor


def to_sparse(pot: PhrasalPotentials) -> SparsePhrasalPotentials:
    """The sparse form of dense potentials: every (item, end, length > 1) with some score
    above -700 (probability > 0) becomes a segment row. O(B J L I)."""
    ew = pot.log_emit_word
    B, J, L, I = ew.shape
    long = ew[:, :, 1:]
    ok = (long.detach() > _NEG).any(3)  # (B, J, L-1)
    ok &= torch.arange(1, L, device=ew.device)[None, :] <= torch.arange(J, device=ew.device)[
        :, None]  # l <= n
    b, n, k = ok.nonzero(as_tuple=True)
    return SparsePhrasalPotentials(ew[:, :, 0], b, n, k + 1, long[b, n, k], *pot[1:])


def _dense_words(one_word, spot, seg_rows, max_len: int, fill: float) -> torch.Tensor:
    """(B,J,L,I): one_word (B,J,I) at l = 0, the listed segments' rows seg_rows (M,I), fill
    elsewhere. O(B J L I)."""
    B, J, I = one_word.shape
    out = torch.full((B, J, max_len, I), fill, dtype=one_word.dtype, device=one_word.device)
    out[:, :, 0] = one_word
    out[spot.seg_item, spot.seg_end, spot.seg_len] = seg_rows
    return out


def to_dense(spot: SparsePhrasalPotentials, max_len: int) -> PhrasalPotentials:
    """The dense form (log_emit_word (B,J,L,I), unlisted segments at the semiring zero)."""
    zero = semiring_zero(spot.log_emit_word.dtype)
    ew = _dense_words(spot.log_emit_word, spot, spot.log_emit_seg, max_len, zero)
    return PhrasalPotentials(ew, *spot[5:])


def sparse_posteriors_to_dense(post: SparsePhrasalPosteriors, spot: SparsePhrasalPotentials,
                               max_len: int) -> PhrasalPosteriors:
    """Dense `PhrasalPosteriors` (word (B,J,L,I)) of sparse ones. O(B J L I)."""
    w = _dense_words(post.word, spot, post.seg, max_len, 0.0)
    return PhrasalPosteriors(post.log_likelihood, w, post.null, post.phrase)
