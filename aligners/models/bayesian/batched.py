"""The batched Gibbs sampler of the Bayesian aligner on torch tensors (CPU or CUDA).

Shapes: a batch holds B length-bucketed sentences padded to I generator and J observed
tokens: gen (B, I), obs (B, J), pair (B, J, I) int32 (id of the word pair (gen g, obs x)),
the state a (B, J) (-1 = NULL, also on padding) and its marginals marg (B, J, I) float32.
Cost per sweep O(sum over batches of B * J * I) work in O(1) tensor operations per block
(no loop over positions or sentences, no host sync), plus O(B * (I + J)) for the counts.
The batches are length buckets (`length_buckets`: one per class of max(I, J), <= 26), so
the tensor operations -- kernel launches on a GPU -- per sweep do not grow with the number
of sentences (unless `max_cells` caps the batches). Memory: 8 bytes per padded cell and
direction (pair ids, marginals; padding about 50%), plus a block's temporaries (about 20
float tensors of its cells).

A *block* is a set of tokens whose conditionals are computed at once from the current
state and counts (each token's own contribution removed exactly: lexical, NULL, its two or
one jumps, and the fertility move of its old position), sampled at once, and then added to
the counts (scatter/index_add). Blocks: stage 1 (IBM1), all tokens of the batch; stages 2
and 3 (HMM, HMM + fertility), the even observed positions of all B sentences, then the odd.

What this approximates (the exact sampler, sampler.py, updates after every token): tokens
of one block do not see each other's new values. (1) Counts: every lexical/NULL/jump/
fertility count is frozen over a block, i.e. over all sentences of one length class (at most
`BayesConfig.batch_cells` padded cells when that is set, `make_batches`). (2) HMM neighbours: given
its neighbours x-1 and x+1 (other parity, fixed in the block) a token's conditional is
exact; only when a neighbour is NULL does the token see a same-parity token beyond it
(its old value). (3) Fertility: two tokens of one sentence and block that pick the same
position do not see each other's link. IBM1 positions are independent given the counts,
so stage 1 has only (1). With one sentence per batch and one block per token this is the
exact sampler; the tests check every block conditional against brute-force enumeration.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np
import torch

__all__ = ["length_buckets", "make_batches", "batched_direction", "block_conditional",
           "state_counts", "cpu_threads"]


_THREADS = {"users": 0, "saved": 1}
_THREADS_LOCK = threading.Lock()


@contextmanager
def cpu_threads(device: str):
    """On the CPU, torch runs one intra-op thread while any batched sampler runs (the two
    directions run on two Python threads instead, as the exact sampler does): the blocks'
    tensors are small, and on a loaded machine spinning OpenMP threads cost 10-100x."""
    if torch.device(device).type != "cpu":
        yield
        return
    with _THREADS_LOCK:
        if _THREADS["users"] == 0:
            _THREADS["saved"] = torch.get_num_threads()
        torch.set_num_threads(1)  # in every entering thread (OpenMP's count is per thread)
        _THREADS["users"] += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS["users"] -= 1
            if _THREADS["users"] == 0:
                torch.set_num_threads(_THREADS["saved"])


_BUCKET_RATIO = 1.25  # length classes: max(I, J, 8) in [1.25^c, 1.25^(c + 1))
_BUCKET_FLOOR = 8  # sentences of at most 8 tokens a side share one class (little padding)
_HOST_CELLS = 1 << 22  # make_batches builds a batch's pair ids this many cells at a time


def length_buckets(n_gen: np.ndarray, n_obs: np.ndarray, *,
                   max_cells: int | None = None) -> list[np.ndarray]:
    """Sentence numbers per batch: n_gen, n_obs (K,) lengths -> list of row arrays.

    Sentences with both sides non-empty, grouped by the length class of max(I, J, 8) (a
    fixed geometric ladder of ratio 1.25: at most 26 classes up to 2048 tokens; 18 on
    Hansards), each class sorted by (I, J). One batch per class: how many batches there are
    depends on the length distribution only, not on the number of sentences. With
    `max_cells`, a class of more padded cells B * max I * max J is cut into that many equal
    parts (fewer cells per batch for memory, more batches as the corpus grows). Padding:
    about 1.5x the real cells on Hansards. Cost O(K log K).
    """
    keep = np.flatnonzero((n_gen > 0) & (n_obs > 0))
    longest = np.maximum(np.maximum(n_gen[keep], n_obs[keep]), _BUCKET_FLOOR)
    cls = np.floor(np.log(longest) / np.log(_BUCKET_RATIO) + 1e-9).astype(np.int64)
    order = np.lexsort((n_obs[keep], n_gen[keep], cls))
    rows, cls = keep[order], cls[order]
    cuts = np.flatnonzero(np.diff(cls)) + 1
    out = []
    for bucket in np.split(rows, cuts) if len(rows) else []:
        cells = len(bucket) * int(n_gen[bucket].max()) * int(n_obs[bucket].max())
        parts = 1 if max_cells is None else min(len(bucket), -(-cells // int(max_cells)))
        out.extend(np.array_split(bucket, parts))
    return out


def make_batches(corpus, *, rev: bool, max_cells: int | None = None, device="cpu"):
    """Padded batches (dicts of tensors on `device`) of one direction, one per length
    bucket (`length_buckets`: their number does not grow with the corpus unless `max_cells`
    caps them). Keys: gen (B, I), obs (B, J), pair (B, J, I) int32 (0 on padding), rows
    (B,), n_gen, n_obs (B,). Cost O(padded cells) time and memory (pair ids int32); host
    temporaries about 40 bytes per cell of `_HOST_CELLS` cells at a time."""
    gi, go = (corpus.tgt, corpus.tgt_off) if rev else (corpus.src, corpus.src_off)
    oi, oo = (corpus.src, corpus.src_off) if rev else (corpus.tgt, corpus.tgt_off)
    n_gen, n_obs = np.diff(go), np.diff(oo)
    batches = []
    for rows in length_buckets(n_gen, n_obs, max_cells=max_cells):
        ng, no = n_gen[rows], n_obs[rows]
        mi, mj = int(ng.max()), int(no.max())
        gpos, opos = np.arange(mi), np.arange(mj)
        gmask = gpos[None] < ng[:, None]
        omask = opos[None] < no[:, None]
        gen = np.where(gmask, gi[np.minimum(go[rows][:, None] + gpos, len(gi) - 1)], 0)
        obs = np.where(omask, oi[np.minimum(oo[rows][:, None] + opos, len(oi) - 1)], 0)
        pair = np.empty((len(rows), mj, mi), np.int32)
        step = max(1, _HOST_CELLS // (mi * mj))  # rows at a time: bounded host temporaries
        for r0 in range(0, len(rows), step):
            sl = slice(r0, r0 + step)
            cells = _cells(corpus.cell_off[rows[sl]], ng[sl], no[sl], mi, mj, rev)
            ok = gmask[sl, None, :] & omask[sl, :, None]
            pair[sl] = np.where(ok, corpus.pair[np.where(ok, cells, 0)], 0)
        t = {"gen": gen, "obs": obs, "pair": pair, "rows": rows, "n_gen": ng, "n_obs": no}
        batches.append({k: torch.as_tensor(np.ascontiguousarray(v), device=device)
                        for k, v in t.items()})
    return batches


def _cells(base, ng, no, mi, mj, rev):
    """(B, J, I) flat cell index of (observed x, generator g) into the corpus layout."""
    g = np.arange(mi)[None, None, :]
    x = np.arange(mj)[None, :, None]
    base = base[:, None, None]
    if rev:  # generator = target side: cell = x * n_gen + g (source-major)
        return base + x * ng[:, None, None] + g
    return base + g * no[:, None, None] + x


def _bucket(m, max_jump):
    return m.clamp(-max_jump, max_jump) + max_jump


def _neighbours(b, a):
    """(prev, nxt) (B, J): the previous / next non-NULL value around each position
    (-1 / n_gen where none), from state a (B, J)."""
    B, J = a.shape
    pos = torch.arange(J, device=a.device).expand(B, J)
    lk = (a >= 0) & (pos < b["n_obs"][:, None])
    last = torch.where(lk, pos, -1).cummax(1).values
    last = torch.cat([last.new_full((B, 1), -1), last[:, :-1]], 1)
    prev = torch.where(last >= 0, a.gather(1, last.clamp(min=0)), -1)
    first = torch.where(lk, pos, J).flip(1).cummin(1).values.flip(1)
    first = torch.cat([first[:, 1:], first.new_full((B, 1), J)], 1)
    nxt = torch.where(first < J, a.gather(1, first.clamp(max=J - 1)),
                      b["n_gen"][:, None].expand(B, J))
    return prev, nxt


def state_counts(b, a, cfg, stage, js=slice(None)):
    """(index, weight) pairs of the counts of state a (B, J) of batch b, one per count
    table [lex, lex_den, null, jump, fert]: lexical pair ids, their generator words and
    NULL-aligned observed words of the tokens at positions js; jump buckets and flat
    fertility cells e * (max_fert + 1) + min(phi, max_fert) of whole sentences (None
    before stages 2 / 3). Weights are 0/1 masks (fixed shapes: no host sync)."""
    B, J = a.shape
    dev = a.device
    pos = torch.arange(J, device=dev)
    valid = pos[None] < b["n_obs"][:, None]
    lk = valid & (a >= 0)
    ac = a.clamp(min=0)
    aj, vj, lj = ac[:, js], valid[:, js], lk[:, js]
    out = [(b["pair"][:, js, :].gather(2, aj[:, :, None]).squeeze(2).long(), lj),
           (b["gen"].gather(1, aj), lj), (b["obs"][:, js], vj & ~lj), None, None]
    if stage >= 2:
        prev, _ = _neighbours(b, a)
        lastpos = torch.where(lk, pos, -1).cummax(1).values[:, -1:]
        last = torch.where(lastpos[:, 0] >= 0, a.gather(1, lastpos.clamp(min=0))[:, 0], -1)
        out[3] = (torch.cat([_bucket(a - prev, cfg.max_jump).view(-1),
                             _bucket(b["n_gen"] - last, cfg.max_jump)]),
                  torch.cat([lk.view(-1), torch.ones(B, dtype=torch.bool, device=dev)]))
    if stage >= 3:
        I = b["gen"].shape[1]
        phi = torch.zeros(B, I, dtype=torch.long, device=dev).scatter_add_(1, ac, lk.long())
        gv = torch.arange(I, device=dev)[None] < b["n_gen"][:, None]
        out[4] = (b["gen"] * (cfg.max_fert + 1) + phi.clamp(max=cfg.max_fert), gv)
    return out


def _add(C, idx, sign):
    """C[k] += sign * weight at the indices of idx[k] (repeats add up)."""
    for c, iw in zip(C, idx, strict=True):
        if iw is not None:
            c.view(-1).index_add_(0, iw[0].reshape(-1), iw[1].reshape(-1).to(c.dtype),
                                  alpha=sign)


def _point_add(x, g, val, ok):
    """x[b, j, g[b, j]] += val[b, j] where ok (and 0 <= g < I): a per-token correction."""
    I = x.shape[2]
    ok = ok & (g >= 0) & (g < I)
    x.scatter_add_(2, g.clamp(0, I - 1)[:, :, None], (val * ok.to(x.dtype))[:, :, None])


def block_conditional(b, a, C, cfg, stage, v_obs, js):
    """Unnormalised conditionals of the tokens at observed positions `js` (a slice) of all
    sentences of batch b: (w (B, Jb, I) over generator positions, 0 on padding; pn (B, Jb)
    NULL), each from state a (B, J) and counts C = [lex, lex_den, null, jump, fert] with
    the token's own contribution removed. Cost O(B * Jb * I), about 20 tensor passes."""
    lex, den, null, jump, fert = C
    dt = lex.dtype
    B, I = b["gen"].shape
    J = a.shape[1]
    dev = a.device
    gpos = torch.arange(I, device=dev)
    gvalid = gpos[None] < b["n_gen"][:, None]  # (B, I)
    old = a[:, js]
    valid = torch.arange(J, device=dev)[js][None] < b["n_obs"][:, None]
    linked = valid & (old >= 0)
    oldc = old.clamp(min=0)
    pid = b["pair"][:, js, :]
    Jb = pid.shape[1]
    e = b["gen"]
    own_e = torch.where(linked, e.gather(1, oldc), -1)  # -1: no word
    # lexical: the token's own count is removed wherever its old generator word occurs
    same = e[:, None, :] == own_e[:, :, None]
    samef = same.to(dt)
    w = lex.index_select(0, pid.reshape(-1).long()).view(B, Jb, I)
    w.add_(cfg.lex_alpha).sub_(samef)
    g_fac = gvalid.to(dt)  # (B, I) factors shared by the sentence's tokens
    w.div_((den.index_select(0, e.view(-1)).view(B, 1, I) + cfg.lex_alpha * v_obs) - samef)
    t = b["obs"][:, js]
    own_null = (valid & (old < 0)).to(dt)
    pn = cfg.p_null * (cfg.null_alpha + null.index_select(0, t.reshape(-1)).view(B, Jb)
                       - own_null) / (cfg.null_alpha * v_obs + null.sum() - own_null)
    if stage == 1:
        g_fac = g_fac * ((1 - cfg.p_null) / b["n_gen"].to(dt))[:, None]
    else:
        prev, nxt = (x[:, js] for x in _neighbours(b, a))
        w.mul_(_jump_factor(jump, cfg, prev, nxt, old, linked, valid, I))
        jt = jump.sum() + cfg.jump_alpha * jump.numel() - linked.to(dt) - valid.to(dt)
        w.mul_(((1 - cfg.p_null) / (jt * (jt + 1)))[:, :, None])
        mj = cfg.max_jump
        bn = _bucket(nxt - prev, mj)
        r1 = torch.where(linked, _bucket(old - prev, mj), bn)
        r2 = torch.where(linked, _bucket(nxt - old, mj), -1)
        jn = jump.index_select(0, bn.reshape(-1)).view(B, Jb) - \
            (valid & (bn == r1)).to(dt) - (bn == r2).to(dt)
        pn = pn * (cfg.jump_alpha + jn) / jt
    if stage >= 3:
        w.mul_(_fert_factor(fert, cfg, b, a, same, oldc, linked, own_e))
    w.mul_(g_fac[:, None, :])
    return w.clamp_(min=0), pn.clamp(min=0)


def _jump_factor(jump, cfg, prev, nxt, old, linked, valid, I):
    """(B, Jb, I): (ja + J'[g - prev]) * (ja + J'[nxt - g] + [same bucket]) with J' the jump
    counts without the token's own jumps (prev -> old -> nxt, or prev -> nxt for NULL)."""
    mj, dt, dev = cfg.max_jump, jump.dtype, jump.device
    B, Jb = prev.shape
    gpos = torch.arange(I, device=dev)
    off = I + 1  # raw jumps lie in [-(I + 1), I + 1]
    ext = jump.index_select(0, _bucket(torch.arange(-off, off + 1, device=dev), mj)) + \
        cfg.jump_alpha
    d1 = gpos + (off - prev)[:, :, None]  # (B, Jb, I) raw jump g - prev, shifted
    d2 = (nxt + off)[:, :, None] - gpos
    j1 = ext.index_select(0, d1.view(-1)).view(B, Jb, I)
    j2 = ext.index_select(0, d2.view(-1)).view(B, Jb, I)
    if I + 1 <= mj:  # no clamping in this batch: equal buckets <=> equal raw jumps
        x1 = torch.where(linked, old - prev, nxt - prev)  # the token's removed raw jumps
        x2 = nxt - old
        one = torch.ones_like(prev, dtype=dt)
        for j, base, sgn in ((j1, prev, 1), (j2, nxt, -1)):
            _point_add(j, base + sgn * x1, -one, valid)
            _point_add(j, base + sgn * x2, -one, linked)
        _point_add(j2, torch.div(prev + nxt, 2, rounding_mode="floor"), one,
                   (prev + nxt) % 2 == 0)
    else:  # general: compare clamped buckets
        b1, b2 = _bucket(d1 - off, mj), _bucket(d2 - off, mj)
        r1 = torch.where(linked, _bucket(old - prev, mj), _bucket(nxt - prev, mj))
        r1 = torch.where(valid, r1, -1)[:, :, None]
        r2 = torch.where(linked, _bucket(nxt - old, mj), -1)[:, :, None]
        j1 -= (b1 == r1).to(dt) + (b1 == r2).to(dt)
        j2 -= (b2 == r1).to(dt) + (b2 == r2).to(dt) - (b1 == b2).to(dt)
    return j1.mul_(j2)


def _fert_factor(fert, cfg, b, a, same, oldc, linked, own_e):
    """(B, Jb, I): the fertility ratio of adding the token to each position g, with the
    token removed (its old position's count drops by one; that position's bucket move is
    seen by every position holding the same word)."""
    F, fa, dt = cfg.max_fert, cfg.fert_alpha, fert.dtype
    B, I = b["gen"].shape
    J = a.shape[1]
    dev = a.device
    e = b["gen"]
    valid = torch.arange(J, device=dev)[None] < b["n_obs"][:, None]
    phi = torch.zeros(B, I, dtype=torch.long, device=dev).scatter_add_(
        1, a.clamp(min=0), (valid & (a >= 0)).long())
    fl = fert.view(-1)
    row = e * (F + 1)
    f0 = phi.clamp(max=F)
    c0 = fl.index_select(0, (row + f0).view(-1)).view(B, I)
    c1 = fl.index_select(0, (row + (phi + 1).clamp(max=F)).view(-1)).view(B, I)
    r0 = torch.where(phi < F, (fa + c1) / (fa + c0 - 1.0), torch.ones_like(c0))  # (B, I)
    # per token: the table of its old word over buckets f, before / after its move q0 -> q1
    po = phi.gather(1, oldc)
    q0, q1 = po.clamp(max=F), (po - 1).clamp(max=F)
    fs = torch.arange(F + 1, device=dev)
    tab = fl.index_select(0, (own_e.clamp(min=0) * (F + 1))[:, :, None].add(fs).view(-1)
                          ).view(*own_e.shape, F + 1)
    moved = tab - (fs == q0[:, :, None]).to(dt) + (fs == q1[:, :, None]).to(dt)
    nxt_f = torch.cat([fs[1:], fs[-1:]])
    base = (fa + tab[:, :, nxt_f]) / (fa + tab - 1.0)
    fix = (fa + moved[:, :, nxt_f]) / (fa + moved - 1.0) / base  # (B, Jb, F + 1)
    fix[:, :, F] = 1.0
    k = fix.gather(2, f0[:, None, :].expand(-1, fix.shape[1], -1))
    fac = torch.where(same, k, torch.ones_like(k)).mul_(r0[:, None, :])
    # the old position itself: phi - 1 with the moved table
    r_own = torch.where(po - 1 < F, (fa + moved.gather(2, q0[:, :, None])[..., 0]) /
                        (fa + moved.gather(2, q1.clamp(min=0)[:, :, None])[..., 0] - 1.0),
                        torch.ones_like(q0, dtype=dt))
    keep = fac.gather(2, oldc[:, :, None])[..., 0]
    fac.scatter_(2, oldc[:, :, None], torch.where(linked, r_own, keep)[:, :, None])
    return fac


def _sweep_block(b, a, C, cfg, stage, v_obs, js, generator, marg):
    """Sample the tokens at positions js of batch b at once, update a and C in place;
    with marg (B, J, I), add their normalised conditionals to it."""
    w, pn = block_conditional(b, a, C, cfg, stage, v_obs, js)
    B, Jb, I = w.shape
    cum = w.cumsum(2)
    total = cum[:, :, -1] + pn
    u = torch.rand(B, Jb, generator=generator, device=w.device, dtype=w.dtype) * total
    new = torch.searchsorted(cum, u[:, :, None], right=True)[:, :, 0]
    valid = torch.arange(a.shape[1], device=a.device)[js][None] < b["n_obs"][:, None]
    new = torch.where((new >= b["n_gen"][:, None]) | ~valid, -1, new)
    if marg is not None:
        marg[:, js, :].addcmul_(w, (1.0 / total)[:, :, None])
    before = state_counts(b, a, cfg, stage, js)
    a[:, js] = new
    _add(C, before, -1)
    _add(C, state_counts(b, a, cfg, stage, js), 1)


def batched_direction(corpus, batches, priors, cfg, its, *, rev, generator, v_obs,
                      dtype=torch.float32):
    """All samplers of one direction with the batched sampler (batches from make_batches).

    Cost O(n_samplers * sweeps * padded cells) time; memory: the batches' marginals (4 bytes
    per padded cell) plus count tables in `dtype` (the (P,) lexical one dominates).
    Returns the marginals (cells,) float32 numpy (averaged over samplers and post-burn-in
    sweeps of the last stage) and the counts [lex, lex_den, null, jump, fert] (numpy,
    averaged over samplers, priors included).
    """
    dev = batches[0]["gen"].device if batches else torch.device("cpu")
    margs = [torch.zeros(b["pair"].shape, dtype=torch.float32, device=dev) for b in batches]
    n_acc = 0
    last = max(s for s in range(3) if its[s] > 0)
    avg = None
    for _ in range(cfg.n_samplers):
        states = []
        for b in batches:
            B, J = b["obs"].shape
            u = torch.rand(B, J, generator=generator, device=dev, dtype=torch.float64)
            a = (u * b["n_gen"][:, None]).long()
            nul = torch.rand(B, J, generator=generator, device=dev, dtype=torch.float64)
            valid = torch.arange(J, device=dev)[None] < b["n_obs"][:, None]
            states.append(torch.where((nul < cfg.p_null) | ~valid, -1, a))
        C = None
        for stage in range(1, 4):
            n = its[stage - 1]
            if n == 0:
                continue
            C = [torch.as_tensor(np.asarray(x if x is not None else np.zeros(len(corpus.keys))),
                                 device=dev).to(dtype).clone() for x in priors]
            for b, a in zip(batches, states, strict=True):
                _add(C, state_counts(b, a, cfg, stage), 1)
            blocks = [slice(None)] if stage == 1 else [slice(0, None, 2), slice(1, None, 2)]
            start_acc = int(np.floor(cfg.burn_in * n))
            for it in range(n):
                acc = stage - 1 == last and it >= start_acc
                for b, a, m in zip(batches, states, margs, strict=True):
                    for js in blocks:
                        _sweep_block(b, a, C, cfg, stage, v_obs, js, generator,
                                     m if acc else None)
                n_acc += acc
        c64 = [c.double() / cfg.n_samplers for c in C]
        avg = c64 if avg is None else [x + y for x, y in zip(avg, c64, strict=True)]
    out = torch.zeros(len(corpus.pair), dtype=torch.float32, device=dev)
    for b, m in zip(batches, margs, strict=True):
        ng, no = b["n_gen"].cpu().numpy(), b["n_obs"].cpu().numpy()
        B, J, I = m.shape
        cells = torch.as_tensor(_cells(corpus.cell_off[b["rows"].cpu().numpy()], ng, no, I, J,
                                       rev), device=dev)
        ok = (torch.arange(I, device=dev)[None, None] < b["n_gen"][:, None, None]) & \
             (torch.arange(J, device=dev)[None, :, None] < b["n_obs"][:, None, None])
        out[cells[ok]] = m[ok]
    out /= max(1, n_acc)
    return out.cpu().numpy(), [c.cpu().numpy() for c in avg]
