"""The batched Gibbs sampler of the Bayesian aligner on torch tensors (CPU or CUDA).

An APPROXIMATION of the exact sequential sampler (sampler.py): all B sentences of a
length-bucketed batch are swept in parallel, token position j by position j, against the
global counts frozen at the start of the batch. Within a sentence the update is sequential
and local state is exact (the previous non-NULL position, the fertilities of the sentence's
positions, and the token's own lexical count, which is removed before its conditional);
what is frozen is every other sentence of the batch's contribution, and the token's own
jump and fertility-table counts (negligible in the large global tables). After the batch,
the global counts get the batch's new-minus-old counts. Batch size 1 with no other
sentence sharing words is the exact sampler up to those own jump/fertility counts.

Shapes: a batch has gen (B, I), obs (B, J), pair (B, I, J) (pair id of (gen g, obs x)),
cell (B, I, J) (flat cell index into the corpus's marginal array, -1 on padding).
Cost per sweep O(sum_batches B * I * J) work in O(J) kernel launches per batch.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["make_batches", "batched_direction"]


def make_batches(corpus, *, rev: bool, max_cells: int = 2_000_000, device="cpu"):
    """Length-bucketed padded batches (list of dicts of tensors) for one direction."""
    gi, go = (corpus.tgt, corpus.tgt_off) if rev else (corpus.src, corpus.src_off)
    oi, oo = (corpus.src, corpus.src_off) if rev else (corpus.tgt, corpus.tgt_off)
    n_gen, n_obs = np.diff(go), np.diff(oo)
    keep = np.flatnonzero((n_gen > 0) & (n_obs > 0))
    order = keep[np.lexsort((n_obs[keep], n_gen[keep]))]
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end + 1 - start) * int(n_gen[order[end]]) * int(
                n_obs[order[start:end + 1]].max()) <= max_cells:
            end += 1
        rows = order[start:end]
        start = end
        mi, mj = int(n_gen[rows].max()), int(n_obs[rows].max())
        b = len(rows)
        gen = np.zeros((b, mi), np.int64)
        obs = np.zeros((b, mj), np.int64)
        pair = np.zeros((b, mi, mj), np.int64)
        cell = np.full((b, mi, mj), -1, np.int64)
        obs_pos = np.full((b, mj), -1, np.int64)
        for r, k in enumerate(rows):
            i_n, j_n = int(n_gen[k]), int(n_obs[k])
            gen[r, :i_n] = gi[go[k]:go[k + 1]]
            obs[r, :j_n] = oi[oo[k]:oo[k + 1]]
            obs_pos[r, :j_n] = np.arange(oo[k], oo[k + 1])
            c0 = corpus.cell_off[k]
            idx = c0 + np.arange(i_n * j_n).reshape((j_n, i_n) if rev else (i_n, j_n))
            idx = idx.T if rev else idx
            cell[r, :i_n, :j_n] = idx
            pair[r, :i_n, :j_n] = corpus.pair[idx]
        t = {k: torch.as_tensor(v, device=device) for k, v in
             (("gen", gen), ("obs", obs), ("pair", pair), ("cell", cell),
              ("obs_pos", obs_pos), ("n_gen", n_gen[rows]), ("n_obs", n_obs[rows]))}
        batches.append(t)
    return batches


def _bucket(m, max_jump):
    return m.clamp(-max_jump, max_jump) + max_jump


def _counts(b, a, cfg, stage, sizes):
    """The (lex, lex_den, null, jump, fert) contributions of alignment a (B, J) of a batch."""
    dev = a.device
    B, I = b["gen"].shape
    J = a.shape[1]
    valid = torch.arange(J, device=dev)[None] < b["n_obs"][:, None]
    linked = valid & (a >= 0)
    ac = a.clamp(min=0)
    pid = b["pair"].gather(1, ac[:, None, :]).squeeze(1)  # (B, J)
    e = b["gen"].gather(1, ac)
    f64 = torch.float64
    lex = torch.zeros(sizes["P"], dtype=f64, device=dev).index_add_(
        0, pid[linked], torch.ones(int(linked.sum()), dtype=f64, device=dev))
    den = torch.zeros(sizes["Vg"], dtype=f64, device=dev).index_add_(
        0, e[linked], torch.ones(int(linked.sum()), dtype=f64, device=dev))
    nl = valid & (a < 0)
    null = torch.zeros(sizes["Vo"], dtype=f64, device=dev).index_add_(
        0, b["obs"][nl], torch.ones(int(nl.sum()), dtype=f64, device=dev))
    jump = torch.zeros(2 * cfg.max_jump + 1, dtype=f64, device=dev)
    fert = torch.zeros(sizes["Vg"], cfg.max_fert + 1, dtype=f64, device=dev)
    if stage >= 2:
        prev = torch.full((B,), -1, dtype=torch.long, device=dev)
        for j in range(J):
            lk = linked[:, j]
            jump.index_add_(0, _bucket(a[lk, j] - prev[lk], cfg.max_jump),
                            torch.ones(int(lk.sum()), dtype=f64, device=dev))
            prev = torch.where(lk, a[:, j], prev)
        jump.index_add_(0, _bucket(b["n_gen"] - prev, cfg.max_jump),
                        torch.ones(B, dtype=f64, device=dev))
    if stage >= 3:
        phi = torch.zeros(B, I, dtype=torch.long, device=dev)
        phi.scatter_add_(1, ac, linked.long())
        gv = torch.arange(I, device=dev)[None] < b["n_gen"][:, None]
        flat = b["gen"][gv] * (cfg.max_fert + 1) + phi[gv].clamp(max=cfg.max_fert)
        fert.view(-1).index_add_(0, flat, torch.ones(flat.numel(), dtype=f64, device=dev))
    return lex, den, null, jump, fert


def _sweep_batch(b, a, C, cfg, stage, gen_rng, marg, accumulate, v_obs):
    """One parallel sweep of batch b (a (B, J) updated in place); returns nothing."""
    dev = a.device
    B, I = b["gen"].shape
    J = a.shape[1]
    lex, den, null, jump, fert = C
    gpos = torch.arange(I, device=dev)
    gvalid = gpos[None] < b["n_gen"][:, None]
    e = b["gen"]
    # next non-NULL position after each j in the old state (positions > j are not yet
    # resampled when j is reached)
    nxt_all = torch.empty(B, J, dtype=torch.long, device=dev)
    cur = b["n_gen"].clone()
    for j in range(J - 1, -1, -1):
        nxt_all[:, j] = cur
        valid = j < b["n_obs"]
        cur = torch.where(valid & (a[:, j] >= 0), a[:, j], cur)
    prev = torch.full((B,), -1, dtype=torch.long, device=dev)
    phi = torch.zeros(B, I, dtype=torch.long, device=dev)
    linked0 = (a >= 0) & (torch.arange(J, device=dev)[None] < b["n_obs"][:, None])
    phi.scatter_add_(1, a.clamp(min=0), linked0.long())
    jt = jump.sum() + cfg.jump_alpha * jump.numel()
    for j in range(J):
        valid = j < b["n_obs"]
        old = a[:, j]
        oldc = old.clamp(min=0)
        linked = valid & (old >= 0)
        pid = b["pair"][:, :, j]  # (B, I)
        own_pair = pid.gather(1, oldc[:, None])
        own_e = e.gather(1, oldc[:, None])
        num = lex[pid] - (linked[:, None] & (pid == own_pair)).double()
        dn = den[e] - (linked[:, None] & (e == own_e)).double()
        p = (cfg.lex_alpha + num) / (cfg.lex_alpha * v_obs + dn)
        nxt = nxt_all[:, j]
        if stage == 1:
            p = p * ((1 - cfg.p_null) / b["n_gen"].double())[:, None]
        else:
            b1 = _bucket(gpos[None] - prev[:, None], cfg.max_jump)
            b2 = _bucket(nxt[:, None] - gpos[None], cfg.max_jump)
            c2 = jump[b2] + (b1 == b2).double()
            p = p * (1 - cfg.p_null) * (cfg.jump_alpha + jump[b1]) * (cfg.jump_alpha + c2) / (
                jt * (jt + 1))
        if stage >= 3:
            ph = phi - (linked[:, None] & (gpos[None] == oldc[:, None])).long()
            f0 = ph.clamp(max=cfg.max_fert)
            f1 = (ph + 1).clamp(max=cfg.max_fert)
            ratio = (cfg.fert_alpha + fert[e, f1]) / (cfg.fert_alpha + fert[e, f0] - 1.0)
            p = p * torch.where(f0 == f1, torch.ones_like(ratio), ratio)
        t = b["obs"][:, j]
        pn = cfg.p_null * (cfg.null_alpha + null[t] - (valid & (old < 0)).double()) / (
            cfg.null_alpha * v_obs + null.sum() - (valid & (old < 0)).double())
        if stage >= 2:
            pn = pn * (cfg.jump_alpha + jump[_bucket(nxt - prev, cfg.max_jump)]) / jt
        p = torch.where(gvalid, p, torch.zeros_like(p)).clamp(min=0)
        probs = torch.cat([p, pn[:, None]], 1)
        total = probs.sum(1, keepdim=True)
        cum = probs.cumsum(1)
        u = torch.rand(B, 1, generator=gen_rng, device=dev, dtype=torch.float64) * total
        new = (cum <= u).sum(1).clamp(max=I)
        new = torch.where(new >= b["n_gen"], torch.full_like(new, -1), new)
        new = torch.where(valid, new, old)
        if accumulate:
            cells = b["cell"][:, :, j]
            m = (p / total)[cells >= 0]
            marg.index_add_(0, cells[cells >= 0], m.to(marg.dtype))
        if stage >= 3:
            phi = ph + (valid[:, None] & (new[:, None] >= 0) & (gpos[None] == new[:, None])
                        ).long()
        a[:, j] = new
        prev = torch.where(valid & (new >= 0), new, prev)


def batched_direction(corpus, batches, priors, cfg, its, *, rev, generator, v_obs):
    """All samplers of one direction with the batched sampler; returns marginals (cells,)
    as a float32 numpy array (averaged) and the last sampler's counts (numpy)."""
    dev = batches[0]["gen"].device if batches else torch.device("cpu")
    sizes = {"P": len(corpus.keys), "Vg": len(priors[1]), "Vo": len(priors[2])}
    marg = torch.zeros(len(corpus.pair), dtype=torch.float32, device=dev)
    n_acc = 0
    last = max(s for s in range(3) if its[s] > 0)
    for _ in range(cfg.n_samplers):
        states = []
        for b in batches:
            B, J = b["obs"].shape
            u = torch.rand(B, J, generator=generator, device=dev, dtype=torch.float64)
            a = (u * b["n_gen"][:, None]).long()
            nul = torch.rand(B, J, generator=generator, device=dev, dtype=torch.float64)
            states.append(torch.where(nul < cfg.p_null, torch.full_like(a, -1), a))
        for stage in range(1, 4):
            n = its[stage - 1]
            if n == 0:
                continue
            C = [torch.as_tensor(np.asarray(x, dtype=np.float64), device=dev).clone()
                 for x in (priors[0], priors[1], priors[2], priors[3], priors[4])]
            for b, a in zip(batches, states, strict=True):
                for c, d in zip(C, _counts(b, a, cfg, stage, sizes), strict=True):
                    c += d
            start_acc = int(np.floor(cfg.burn_in * n))
            for it in range(n):
                acc = stage - 1 == last and it >= start_acc
                for b, a in zip(batches, states, strict=True):
                    before = _counts(b, a, cfg, stage, sizes)
                    _sweep_batch(b, a, C, cfg, stage, generator, marg, acc, v_obs)
                    for c, d0, d1 in zip(C, before, _counts(b, a, cfg, stage, sizes),
                                         strict=True):
                        c += d1 - d0
                n_acc += acc
    marg /= max(1, n_acc)
    return marg.cpu().numpy(), [c.cpu().numpy() for c in C]
