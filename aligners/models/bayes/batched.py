"""The batched Gibbs sampler of the Bayesian aligner on torch tensors (CPU or CUDA).

Shapes: a batch holds B length-bucketed sentences padded to I generator and J observed
tokens: gen (B, I), obs (B, J), pair (B, J, I) int32 (id of the word pair (gen g, obs x)),
the state a (B, J) (-1 = NULL, also on padding) and its marginals marg (B, J, I) float32.
Cost per sweep O(sum over batches of B * J * I) work in O(1) tensor operations per block
(no loop over positions or sentences, no host sync), plus O(B * (I + J)) for the counts.

A *block* is a set of tokens whose conditionals are computed at once from the current
state and counts (each token's own contribution removed exactly: lexical, NULL, its two or
one jumps, and the fertility move of its old position), sampled at once, and then added to
the counts (scatter/index_add). Blocks: stage 1 (IBM1), all tokens of the batch; stages 2
and 3 (HMM, HMM + fertility), the even observed positions of all B sentences, then the odd.

What this approximates (the exact sampler, sampler.py, updates after every token): tokens
of one block do not see each other's new values. (1) Counts: every lexical/NULL/jump/
fertility count is frozen over a block, i.e. over up to B sentences (bounded by
`batch_cells` cells and a share of the corpus, `make_batches`). (2) HMM neighbours: given
its neighbours x-1 and x+1 (other parity, fixed in the block) a token's conditional is
exact; only when a neighbour is NULL does the token see a same-parity token beyond it
(its old value). (3) Fertility: two tokens of one sentence and block that pick the same
position do not see each other's link. IBM1 positions are independent given the counts,
so stage 1 has only (1). With one sentence per batch and one block per token this is the
exact sampler; the tests check every block conditional against brute-force enumeration.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["make_batches", "batched_direction", "block_conditional", "state_counts"]


def make_batches(corpus, *, rev: bool, max_cells: int = 2_000_000, max_share: float = 1.0,
                 device="cpu"):
    """Length-bucketed padded batches (dicts of tensors on `device`) of one direction.

    A batch has at most `max_cells` padded cells (B * I * J) and at most
    ceil(max_share * K) of the K sentences. Cost O(padded cells) time and memory
    (pair ids int32).
    """
    gi, go = (corpus.tgt, corpus.tgt_off) if rev else (corpus.src, corpus.src_off)
    oi, oo = (corpus.src, corpus.src_off) if rev else (corpus.tgt, corpus.tgt_off)
    n_gen, n_obs = np.diff(go), np.diff(oo)
    keep = np.flatnonzero((n_gen > 0) & (n_obs > 0))
    order = keep[np.lexsort((n_obs[keep], n_gen[keep]))]
    max_rows = max(1, int(np.ceil(max_share * max(1, len(keep)))))
    bounds, start = [], 0
    while start < len(order):  # greedy: grow while B * max I * max J fits (I is sorted)
        end, mj = start + 1, int(n_obs[order[start]])
        while end < len(order) and end - start < max_rows:
            mj2 = max(mj, int(n_obs[order[end]]))
            if (end + 1 - start) * int(n_gen[order[end]]) * mj2 > max_cells:
                break
            mj, end = mj2, end + 1
        bounds.append((start, end))
        start = end
    batches = []
    for start, end in bounds:
        rows = order[start:end]
        ng, no = n_gen[rows], n_obs[rows]
        mi, mj = int(ng.max()), int(no.max())
        gpos, opos = np.arange(mi), np.arange(mj)
        gmask = gpos[None] < ng[:, None]
        omask = opos[None] < no[:, None]
        gen = np.where(gmask, gi[np.minimum(go[rows][:, None] + gpos, len(gi) - 1)], 0)
        obs = np.where(omask, oi[np.minimum(oo[rows][:, None] + opos, len(oi) - 1)], 0)
        cells = _cells(corpus.cell_off[rows], ng, no, mi, mj, rev)
        ok = gmask[:, None, :] & omask[:, :, None]
        pair = np.where(ok, corpus.pair[np.where(ok, cells, 0)], 0).astype(np.int32)
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
    """Index lists of the counts of state a (B, J) of batch b: (lex pair ids, lex_den gen
    words, NULL obs words) of the tokens at positions js, and (jump buckets, flat fertility
    cells e * (max_fert + 1) + phi) of whole sentences (empty before stages 2 / 3)."""
    B, J = a.shape
    dev = a.device
    pos = torch.arange(J, device=dev)
    valid = pos[None] < b["n_obs"][:, None]
    lk = valid & (a >= 0)
    ac = a.clamp(min=0)
    aj, vj, lj = ac[:, js], valid[:, js], lk[:, js]
    pid = b["pair"][:, js, :].gather(2, aj[:, :, None]).squeeze(2)[lj].long()
    e = b["gen"].gather(1, aj)[lj]
    nul = b["obs"][:, js][vj & ~lj]
    empty = torch.zeros(0, dtype=torch.long, device=dev)
    jumps, fert = empty, empty
    if stage >= 2:
        prev, _ = _neighbours(b, a)
        lastpos = torch.where(lk, pos, -1).cummax(1).values[:, -1:]
        last = torch.where(lastpos[:, 0] >= 0, a.gather(1, lastpos.clamp(min=0))[:, 0], -1)
        jumps = torch.cat([_bucket(a - prev, cfg.max_jump)[lk],
                           _bucket(b["n_gen"] - last, cfg.max_jump)])
    if stage >= 3:
        I = b["gen"].shape[1]
        phi = torch.zeros(B, I, dtype=torch.long, device=dev).scatter_add_(1, ac, lk.long())
        gv = torch.arange(I, device=dev)[None] < b["n_gen"][:, None]
        fert = b["gen"][gv] * (cfg.max_fert + 1) + phi[gv].clamp(max=cfg.max_fert)
    return pid, e, nul, jumps, fert


def _add(C, idx, sign):
    """C[k] += sign at the indices idx[k] (repeats add up)."""
    for n, (c, i) in enumerate(zip(C, idx, strict=True)):
        if not i.numel():
            continue
        if n == 3:  # the small jump table: a histogram
            c += sign * torch.bincount(i, minlength=c.numel()).to(c.dtype)
        else:
            c.view(-1).index_add_(0, i, torch.full(i.shape, float(sign), dtype=c.dtype,
                                                   device=c.device))


def block_conditional(b, a, C, cfg, stage, v_obs, js):
    """Unnormalised conditionals of the tokens at observed positions `js` (a slice) of all
    sentences of batch b: (w (B, Jb, I) over generator positions, 0 on padding; pn (B, Jb)
    NULL), each from state a (B, J) and counts C = [lex, lex_den, null, jump, fert] with
    the token's own contribution removed. Cost O(B * Jb * I)."""
    lex, den, null, jump, fert = C
    dt = lex.dtype
    B, I = b["gen"].shape
    J = a.shape[1]
    dev = a.device
    gpos = torch.arange(I, device=dev)
    old = a[:, js]
    valid = torch.arange(J, device=dev)[js][None] < b["n_obs"][:, None]
    linked = valid & (old >= 0)
    oldc = old.clamp(min=0)
    pid = b["pair"][:, js, :]
    Jb = pid.shape[1]
    e = b["gen"]
    own_e = e.gather(1, oldc)
    # lexical: the token's own count is removed wherever its old generator word occurs
    same = ((e[:, None, :] == own_e[:, :, None]) & linked[:, :, None]).to(dt)
    w = lex.index_select(0, pid.reshape(-1).long()).view(B, Jb, I)
    w.sub_(same).add_(cfg.lex_alpha)
    w.div_(den.index_select(0, e.reshape(-1)).view(B, 1, I) - same + cfg.lex_alpha * v_obs)
    t = b["obs"][:, js]
    own_null = (valid & (old < 0)).to(dt)
    pn = cfg.p_null * (cfg.null_alpha + null.index_select(0, t.reshape(-1)).view(B, Jb)
                       - own_null) / (cfg.null_alpha * v_obs + null.sum() - own_null)
    if stage == 1:
        w.mul_(((1 - cfg.p_null) / b["n_gen"].to(dt))[:, None, None])
    else:
        prev, nxt = (x[:, js] for x in _neighbours(b, a))
        mj = cfg.max_jump
        # the token's own jumps: prev -> old -> nxt (linked) or prev -> nxt (NULL)
        r1 = torch.where(linked, _bucket(old - prev, mj), _bucket(nxt - prev, mj))
        r1 = torch.where(valid, r1, -1)[:, :, None]
        r2 = torch.where(linked, _bucket(nxt - old, mj), -1)[:, :, None]
        jt = jump.sum() + cfg.jump_alpha * jump.numel() - linked.to(dt)[:, :, None] - \
            valid.to(dt)[:, :, None]
        b1 = _bucket(gpos - prev[:, :, None], mj)
        b2 = _bucket(nxt[:, :, None] - gpos, mj)
        j1 = jump.index_select(0, b1.view(-1)).view(B, Jb, I) - (b1 == r1).to(dt) - \
            (b1 == r2).to(dt)
        j2 = jump.index_select(0, b2.view(-1)).view(B, Jb, I) - (b2 == r1).to(dt) - \
            (b2 == r2).to(dt) + (b1 == b2).to(dt)
        w.mul_(j1.add_(cfg.jump_alpha)).mul_(j2.add_(cfg.jump_alpha))
        w.mul_((1 - cfg.p_null) / (jt * (jt + 1)))
        bn = _bucket(nxt - prev, mj)
        jn = jump.index_select(0, bn.reshape(-1)).view(B, Jb) - (bn == r1[..., 0]).to(dt) - \
            (bn == r2[..., 0]).to(dt)
        pn = pn * (cfg.jump_alpha + jn) / jt[..., 0]
    if stage >= 3:
        F = cfg.max_fert
        va = torch.arange(J, device=dev)[None] < b["n_obs"][:, None]
        phi = torch.zeros(B, I, dtype=torch.long, device=dev).scatter_add_(
            1, a.clamp(min=0), (va & (a >= 0)).long())
        own = (gpos == oldc[:, :, None]) & linked[:, :, None]
        ph = phi[:, None, :] - own.long()  # (B, Jb, I) fertilities without the token
        f0 = ph.clamp(max=F)
        row = (e * (F + 1))[:, None, :]
        c0 = fert.view(-1).index_select(0, (row + f0).view(-1)).view(B, Jb, I)
        c1 = fert.view(-1).index_select(0, (row + (ph + 1).clamp(max=F)).view(-1)).view(
            B, Jb, I)
        # the old position's move from bucket min(phi, F) to min(phi - 1, F), on its word
        po = phi.gather(1, oldc)
        mo = same.bool()
        q0 = po.clamp(max=F)[:, :, None]
        q1 = (po - 1).clamp(max=F)[:, :, None]
        c0 = c0 - (mo & (f0 == q0)).to(dt) + (mo & (f0 == q1)).to(dt)
        f1 = (ph + 1).clamp(max=F)
        c1 = c1 - (mo & (f1 == q0)).to(dt) + (mo & (f1 == q1)).to(dt)
        ratio = (cfg.fert_alpha + c1) / (cfg.fert_alpha + c0 - 1.0)
        w.mul_(torch.where(ph < F, ratio, torch.ones_like(ratio)))
    w.mul_((gpos[None, None] < b["n_gen"][:, None, None]).to(dt))
    return w.clamp_(min=0), pn.clamp(min=0)


def _sweep_block(b, a, C, cfg, stage, v_obs, js, generator, marg):
    """Sample the tokens at positions js of batch b at once, update a and C in place;
    with marg (B, J, I), add their normalised conditionals to it."""
    w, pn = block_conditional(b, a, C, cfg, stage, v_obs, js)
    B, Jb, I = w.shape
    total = w.sum(2) + pn
    u = torch.rand(B, Jb, generator=generator, device=w.device, dtype=w.dtype) * total
    new = (w.cumsum(2) <= u[:, :, None]).sum(2)
    n_obs = b["n_obs"][:, None]
    valid = torch.arange(a.shape[1], device=a.device)[js][None] < n_obs
    new = torch.where((new >= b["n_gen"][:, None]) | ~valid, -1, new)
    if marg is not None:
        marg[:, js, :] += (w / total[:, :, None]).to(marg.dtype)
    before = state_counts(b, a, cfg, stage, js)
    a[:, js] = new
    _add(C, before, -1)
    _add(C, state_counts(b, a, cfg, stage, js), 1)


def batched_direction(corpus, batches, priors, cfg, its, *, rev, generator, v_obs,
                      dtype=torch.float32):
    """All samplers of one direction with the batched sampler.

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
