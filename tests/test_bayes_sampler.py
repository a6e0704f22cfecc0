"""The collapsed Gibbs sampler against brute force: per-token conditionals equal ratios of the
enumerated joint, and the chain's stationary distribution on a two-sentence corpus is the
enumerated posterior (within sampling error)."""

import itertools
import math

import bayes_token_conditional as TC
import numpy as np
import pytest
from bayes_dense import pair_ids

from aligners.data.vocab import WordIds
from aligners.models.bayesian import counts as C
from aligners.models.bayesian import sampler as K
from aligners.models.bayesian.corpus import encode_bitext
from aligners.models.bayesian.model import BayesConfig

CFG = BayesConfig(lex_alpha=0.1, null_alpha=0.2, jump_alpha=0.5, fert_alpha=0.3, p_null=0.2,
                  max_jump=2, max_fert=2)


def _dm(counts, alpha, dim):
    """log Dirichlet-multinomial probability of an ordered sequence with these counts."""
    n = sum(counts)
    return (math.lgamma(alpha * dim) - math.lgamma(alpha * dim + n)
            + sum(math.lgamma(alpha + c) - math.lgamma(alpha) for c in counts))


def log_joint(sents, a, cfg, stage, v_obs, nb):
    """Brute-force log P(obs, a) of one direction; sents: [(gen ids, obs ids)], a: [[v]]."""
    lex, null, jumps, fert, pos = {}, {}, {}, {}, 0.0
    for (gen, obs), al in zip(sents, a, strict=True):
        prev, phi = -1, [0] * len(gen)
        for x, v in enumerate(al):
            if v < 0:
                null[obs[x]] = null.get(obs[x], 0) + 1
                pos += math.log(cfg.p_null)
                continue
            lex.setdefault(gen[v], {}).setdefault(obs[x], 0)
            lex[gen[v]][obs[x]] += 1
            phi[v] += 1
            pos += math.log((1 - cfg.p_null) / (len(gen) if stage == 1 else 1))
            b = min(max(v - prev, -cfg.max_jump), cfg.max_jump)
            jumps[b] = jumps.get(b, 0) + 1
            prev = v
        b = min(max(len(gen) - prev, -cfg.max_jump), cfg.max_jump)
        jumps[b] = jumps.get(b, 0) + 1
        for g, e in enumerate(gen):
            fert.setdefault(e, {}).setdefault(min(phi[g], cfg.max_fert), 0)
            fert[e][min(phi[g], cfg.max_fert)] += 1
    lp = pos + _dm(list(null.values()), cfg.null_alpha, v_obs)
    lp += sum(_dm(list(c.values()), cfg.lex_alpha, v_obs) for c in lex.values())
    if stage >= 2:
        lp += _dm(list(jumps.values()), cfg.jump_alpha, nb)
    if stage >= 3:
        lp += sum(_dm(list(c.values()), cfg.fert_alpha, cfg.max_fert + 1)
                  for c in fert.values())
    return lp


def _setup(pairs, direction, a_lists, stage, cfg=CFG):
    corpus = encode_bitext(pairs, WordIds(), WordIds())
    fwd = direction == "fwd"
    gen, gen_off = (corpus.src, corpus.src_off) if fwd else (corpus.tgt, corpus.tgt_off)
    obs, obs_off = (corpus.tgt, corpus.tgt_off) if fwd else (corpus.src, corpus.src_off)
    v_gen = corpus.n_src_words if fwd else corpus.n_tgt_words
    v_obs = corpus.n_tgt_words if fwd else corpus.n_src_words
    a = np.array([v for al in a_lists for v in al], np.int32)
    nb = 2 * cfg.max_jump + 1
    arrays = [gen, gen_off, obs, obs_off, corpus.cell_off, corpus.pair_lo, corpus.pair_hi,
              not fwd, a,
              np.zeros(len(gen), np.int32), np.zeros(corpus.n_pairs, np.float32),
              np.zeros(v_gen), np.zeros(v_obs), np.zeros(1), np.zeros(nb), np.zeros(1),
              np.zeros((v_gen, cfg.max_fert + 1)), np.zeros(v_gen), np.zeros((v_gen, cfg.max_fert))]
    C.add_counts(*arrays, stage, cfg.max_jump, cfg.max_fert, cfg.lex_alpha * v_obs,
                 cfg.fert_alpha)
    sents = [(gen[gen_off[k]:gen_off[k + 1]].tolist(), obs[obs_off[k]:obs_off[k + 1]].tolist())
             for k in range(len(gen_off) - 1)]
    return arrays, sents, v_obs, nb


def _hyper(cfg, v_obs, nb):
    return (cfg.p_null, cfg.lex_alpha, cfg.lex_alpha * v_obs, cfg.null_alpha,
            cfg.null_alpha * v_obs, cfg.jump_alpha, cfg.jump_alpha * nb, cfg.fert_alpha,
            cfg.max_jump, cfg.max_fert)


PAIRS = [("a b c a".split(), "x y z y w".split()), ("b a".split(), "y x x".split()),
         ("c".split(), "z w".split())]


def random_alignments(rng, direction="fwd", pairs=PAIRS):
    """A random state [[v]] of `pairs` in `direction`: v in -1 (NULL) .. I-1 per token."""
    lens = [(len(s), len(t)) for s, t in pairs]
    if direction == "rev":
        lens = [(j, i) for i, j in lens]
    return [[int(v) for v in rng.integers(-1, i, size=j)] for i, j in lens]


def brute_conditional(sents, a_lists, k, x, cfg, stage, v_obs, nb):
    """Token x of sentence k: its normalised conditional (I + 1,), positions then NULL, as
    ratios of the enumerated joint with only that token's value changed."""
    logs = []
    for v in [*range(len(sents[k][0])), -1]:
        alt = [list(al) for al in a_lists]
        alt[k][x] = v
        logs.append(log_joint(sents, alt, cfg, stage, v_obs, nb))
    p = np.exp(np.array(logs) - max(logs))
    return p / p.sum()


@pytest.mark.parametrize("direction", ["fwd", "rev"])
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_token_conditional_equals_brute_force(direction, stage):
    rng = np.random.default_rng(stage)
    a_lists = random_alignments(rng, direction)
    arrays, sents, v_obs, nb = _setup(PAIRS, direction, a_lists, stage)
    before = [x.copy() for x in arrays[8:] if isinstance(x, np.ndarray)]
    for k, (gen, obs) in enumerate(sents):
        for x in range(len(obs)):
            out = np.zeros(len(gen) + 1)
            TC.token_conditional(k, x, *arrays, stage, *_hyper(CFG, v_obs, nb), out)
            exact = brute_conditional(sents, a_lists, k, x, CFG, stage, v_obs, nb)
            np.testing.assert_allclose(out / out.sum(), exact, rtol=1e-9)
    after = [x for x in arrays[8:] if isinstance(x, np.ndarray)]
    for b, c in zip(before, after, strict=True):  # the state is left unchanged
        np.testing.assert_array_equal(b, c)


def test_brute_force_oracle_can_fail():
    """The oracle distinguishes the stages (so the equality test above is not vacuous)."""
    arrays, sents, v_obs, nb = _setup(PAIRS, "fwd", [[0, 1, 2, 1, -1], [1, 0, 0], [0, -1]], 1)
    a = [[0, 1, 2, 1, -1], [1, 0, 0], [0, -1]]
    b = [[0, 1, 2, 1, -1], [1, 0, 0], [0, 0]]
    d1 = log_joint(sents, a, CFG, 1, v_obs, nb) - log_joint(sents, b, CFG, 1, v_obs, nb)
    d3 = log_joint(sents, a, CFG, 3, v_obs, nb) - log_joint(sents, b, CFG, 3, v_obs, nb)
    assert abs(d1 - d3) > 1e-3


@pytest.mark.parametrize("direction", ["fwd", "rev"])
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_sweep_uses_the_same_conditional(direction, stage):
    """The sweep's inlined conditional equals token_conditional (checked by brute force
    above): the marginal a sweep adds for the first token is its normalised conditional."""
    rng = np.random.default_rng(11 + stage)
    a_lists = random_alignments(rng, direction)
    arrays, sents, v_obs, nb = _setup(PAIRS, direction, a_lists, stage)
    n_gen = len(sents[0][0])
    out = np.zeros(n_gen + 1)
    TC.token_conditional(0, 0, *arrays, stage, *_hyper(CFG, v_obs, nb), out)
    slots = _slots(len(arrays[8]), 8)
    K.sweep(*arrays, 0, len(sents), rng.random(len(arrays[8])), *slots, True, 0, stage,
            *_hyper(CFG, v_obs, nb), np.zeros((2, 8)))
    dense = np.zeros(n_gen)
    keep = slots[0][0] >= 0
    dense[slots[0][0][keep]] = slots[1][0][keep]
    np.testing.assert_allclose(dense, out[:n_gen] / out.sum(), rtol=1e-5)
    np.testing.assert_allclose(slots[3][0], out[n_gen] / out.sum(), rtol=1e-5)


def _slots(n_tokens, k, dtype=np.int16):
    """(pos, mass, since, null) sparse marginal arrays, all slots free."""
    return (np.full((n_tokens, k), -1, dtype), np.zeros((n_tokens, k), np.float32),
            np.zeros((n_tokens, k), np.uint16), np.zeros(n_tokens, np.float32))


def _reference_sweep(arrays, sents, stage, v_obs, nb, u, acc):
    """One sweep the slow way: each token's conditional from token_conditional (checked
    against brute force above), its draw, then every count rebuilt from scratch."""
    a = arrays[8]
    off = 0
    for k, (gen, obs) in enumerate(sents):
        for x in range(len(obs)):
            out = np.zeros(len(gen) + 1)
            TC.token_conditional(k, x, *arrays, stage, *_hyper(CFG, v_obs, nb), out)
            p = out / out.sum()
            acc[off + x, :len(gen) + 1] += p
            new = int(np.searchsorted(np.cumsum(out), u[off + x] * out.sum(), side="right"))
            a[off + x] = -1 if new >= len(gen) else new
            for arr in arrays[10:19]:
                arr[...] = 0
            C.add_counts(*arrays, stage, CFG.max_jump, CFG.max_fert, CFG.lex_alpha * v_obs,
                         CFG.fert_alpha)
        off += len(obs)


@pytest.mark.parametrize("direction", ["fwd", "rev"])
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_sweep_equals_token_by_token_reference(direction, stage):
    """Several sweeps of the compiled kernel (its cached per-position factors refreshed as
    counts change, swept in two chunks) give the same alignments as the reference that
    recomputes everything per token, and its slots (K >= I) hold the same summed
    conditionals."""
    rng = np.random.default_rng(5 + stage)
    a_lists = random_alignments(rng, direction)
    fast, sents, v_obs, nb = _setup(PAIRS, direction, a_lists, stage)
    ref = _setup(PAIRS, direction, a_lists, stage)[0]
    n_tok = len(fast[8])
    slots = _slots(n_tok, 8)
    acc = np.zeros((n_tok, 9))
    split = fast[3][1]  # tokens of sentence 0: the second chunk starts there
    for it in range(6):
        u = rng.random(n_tok)
        K.sweep(*fast, 0, 1, u[:split], *slots, True, it, stage, *_hyper(CFG, v_obs, nb),
                np.zeros((2, 8)))
        K.sweep(*fast, 1, len(sents), u[split:], *slots, True, it, stage,
                *_hyper(CFG, v_obs, nb), np.zeros((2, 8)))
        _reference_sweep(ref, sents, stage, v_obs, nb, u, acc)
        np.testing.assert_array_equal(fast[8], ref[8])
    off = 0
    for gen, obs in sents:
        for x in range(len(obs)):
            dense = np.zeros(len(gen))
            keep = slots[0][off + x] >= 0
            dense[slots[0][off + x][keep]] = slots[1][off + x][keep]
            np.testing.assert_allclose(dense, acc[off + x, :len(gen)], rtol=1e-5)
            np.testing.assert_allclose(slots[3][off + x], acc[off + x, len(gen)], rtol=1e-5)
        off += len(obs)


@pytest.mark.parametrize("direction", ["fwd", "rev"])
def test_single_cell_pairs_are_not_read_and_the_chain_is_unchanged(direction):
    """Pair ids from n_shared on occur in exactly one cell (the ids before it in two or
    more); sweeps that skip reading their counts (n_shared) give the same alignments and
    slots as sweeps that read every id (-1), at every stage; skipping shared ids too
    (n_shared = 0) changes the chain (the comparison can fail)."""
    c = encode_bitext(PAIRS, WordIds(), WordIds())
    cells = np.bincount(pair_ids(c), minlength=c.n_pairs)
    assert 0 < c.n_shared < c.n_pairs
    assert (cells[:c.n_shared] >= 2).all() and (cells[c.n_shared:] == 1).all()
    a_lists = random_alignments(np.random.default_rng(21), direction)
    differs = False
    for stage in (1, 2, 3):
        runs = []
        for lim in (-1, c.n_shared, 0):
            arrays, sents, v_obs, nb = _setup(PAIRS, direction, a_lists, stage)
            slots = _slots(len(arrays[8]), 8)
            r = np.random.default_rng(stage)
            for it in range(30):
                K.sweep(*arrays, 0, len(sents), r.random(len(arrays[8])), *slots, True, it,
                        stage, *_hyper(CFG, v_obs, nb), np.zeros((2, 8)), lim)
            runs.append((arrays[8].copy(), slots))
        (a_all, s_all), (a_skip, s_skip), (a_zero, _) = runs
        np.testing.assert_array_equal(a_all, a_skip)
        for x, y in zip(s_all, s_skip, strict=True):
            np.testing.assert_array_equal(x, y)
        differs |= not np.array_equal(a_all, a_zero)
    assert differs


def test_few_slots_keep_the_argmax_and_lower_bound_the_dense_marginals():
    """K = 2 slots on sentences of up to 4 positions: the chain is the same (slots never feed
    back), every kept mass is <= the dense (K >= I) one, NULL's mass is exact, and the
    per-token argmax (vs NULL) is the same as the dense one."""
    a_lists = random_alignments(np.random.default_rng(3))
    runs = []
    for n_slots in (8, 2):
        arrays, sents, v_obs, nb = _setup(PAIRS, "fwd", a_lists, 3)
        slots = _slots(len(arrays[8]), n_slots)
        r = np.random.default_rng(9)
        for it in range(200):
            K.sweep(*arrays, 0, len(sents), r.random(len(arrays[8])), *slots, True, it, 3,
                    *_hyper(CFG, v_obs, nb), np.zeros((2, 8)))
        runs.append((arrays[8].copy(), slots))
    (a8, d), (a2, sp) = runs
    np.testing.assert_array_equal(a8, a2)
    np.testing.assert_array_equal(d[3], sp[3])
    for t in range(len(a8)):
        dense = {int(g): float(m) for g, m in zip(d[0][t], d[1][t], strict=True) if g >= 0}
        kept = {int(g): float(m) for g, m in zip(sp[0][t], sp[1][t], strict=True) if g >= 0}
        assert all(m <= dense[g] + 1e-4 for g, m in kept.items())
        best = max(dense, key=lambda g: (dense[g], -g))
        assert max(kept, key=lambda g: (kept[g], -g)) == best
    assert any(len([g for g in d[0][t] if g >= 0]) > 2 for t in range(len(a8)))


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_stationary_distribution_matches_enumerated_posterior(stage):
    """Two sentence pairs, 4 target tokens, 3^4 = 81 forward alignments: the chain's visit
    frequencies are within total variation 0.05 of the exact posterior, and its
    Rao-Blackwellised link marginals within 0.015 (40k sweeps; the observed error is about
    a third of these bounds)."""
    pairs = [("a b".split(), "x y".split()), ("a c".split(), "x z".split())]
    init = [[0, 1], [0, 1]]
    arrays, sents, v_obs, nb = _setup(pairs, "fwd", init, stage)
    states = list(itertools.product([0, 1, -1], repeat=4))
    logs = np.array([log_joint(sents, [list(s[:2]), list(s[2:])], CFG, stage, v_obs, nb)
                     for s in states])
    post = np.exp(logs - logs.max())
    post /= post.sum()
    index = {s: n for n, s in enumerate(states)}
    rng = np.random.default_rng(7)
    n_sweeps = 40_000
    visits = np.zeros(len(states))
    slots = _slots(4, 2, np.int16)
    slots = (slots[0], slots[1], slots[2].astype(np.int32), slots[3])  # 40k sweeps
    buf = np.zeros((2, 3))
    a = arrays[8]
    for it in range(n_sweeps):
        K.sweep(*arrays, 0, 2, rng.random(4), *slots, True, it, stage, *_hyper(CFG, v_obs, nb),
                buf)
        visits[index[tuple(a.tolist())]] += 1
    tv = 0.5 * np.abs(visits / n_sweeps - post).sum()
    assert tv < 0.05, tv
    marg = np.zeros(8)  # cells (k, i, j) = p(a_j = i), from the slots of token (k, j)
    for t in range(4):
        for g, m in zip(slots[0][t], slots[1][t], strict=True):
            marg[4 * (t // 2) + 2 * g + t % 2] += m if g >= 0 else 0.0
    exact = np.zeros(len(marg))
    for p, s in zip(post, states, strict=True):
        for k in range(2):
            for j in range(2):
                if s[2 * k + j] >= 0:
                    exact[4 * k + 2 * s[2 * k + j] + j] += p
    np.testing.assert_allclose(marg / n_sweeps, exact, atol=0.015)


def test_release_free_heap_returns_pages_and_falls_back(monkeypatch):
    """After many small arrays are freed, glibc's malloc_trim hands pages back (True); without
    a usable libc the helper answers False instead of raising."""
    import ctypes
    import sys

    from aligners.data.heap import release_free_heap

    if sys.platform.startswith("linux") and "glibc" in " ".join(__import__("platform").libc_ver()):
        junk = [np.ones(100) for _ in range(100_000)]
        keep = junk[::1000]
        del junk
        assert release_free_heap() is True
        assert len(keep) == 100

    def no_libc(*a, **k):
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert release_free_heap() is False


def test_rings_link_each_sentence_position_to_its_same_word_positions():
    """ring's cycles are exactly the groups of equal words of each sentence (a word that occurs
    once points to itself); the stamps of one sentence do not leak into the next."""
    from numba import njit

    @njit
    def rings_of(gen, off, v):
        stamp = np.full(v, -1, np.int64)
        last = np.empty(v, np.int64)
        out = np.empty(len(gen), np.int64)
        ring = np.empty(len(gen), np.int64)
        for k in range(len(off) - 1):
            K._rings(ring, k, off[k], off[k + 1] - off[k], gen, stamp, last)
            out[off[k]:off[k + 1]] = ring[:off[k + 1] - off[k]]
        return out

    rng = np.random.default_rng(0)
    lens = rng.integers(1, 12, size=40)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    gen = rng.integers(0, 6, size=off[-1]).astype(np.int32)
    rings = rings_of(gen, off, 6)
    for k in range(len(lens)):
        words, ring = gen[off[k]:off[k + 1]], rings[off[k]:off[k + 1]]
        for g in range(len(words)):
            cycle, h = [g], int(ring[g])
            while h != g:
                assert len(cycle) <= len(words), "not a cycle"
                cycle.append(h)
                h = int(ring[h])
            assert sorted(cycle) == np.flatnonzero(words == words[g]).tolist()


def test_prefetch_hint_changes_no_value():
    """prefetch is a hint: a gather that prefetches ahead (also past the end) sums the same."""
    from numba import njit

    from aligners.models.bayesian.prefetch import prefetch

    @njit
    def gather(x, idx, ahead):
        s = 0.0
        for i in range(idx.shape[0]):
            prefetch(x, idx[min(i + ahead, idx.shape[0] - 1)])
            prefetch(x, x.shape[0] + 64)
            s += x[idx[i]]
        return s

    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64, np.int64):
        x = rng.integers(0, 100, size=5000).astype(dtype)
        idx = rng.integers(0, 5000, size=20000)
        assert gather(x, idx, 8) == float(x[idx].astype(np.float64).sum())
