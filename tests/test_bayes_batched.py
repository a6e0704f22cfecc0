"""The batched torch sampler (an approximation: counts frozen per block of tokens): its block
conditionals equal brute-force enumeration of the collapsed joint, its incremental counts
equal a recount, it learns the toy bitext, is reproducible from its seed, and runs on CUDA
tensors where a GPU exists."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from test_bayes_sampler import CFG, PAIRS, brute_conditional
from word_toy import toy_corpus

from aligners.data.vocab import WordIds
from aligners.models.bayesian import BayesAligner, BayesConfig
from aligners.models.bayesian import batched as BT
from aligners.models.bayesian.corpus import encode_bitext
from aligners.models.bayesian.decode import direction_links

FAST = dict(iterations=[4, 4, 16], n_samplers=2, sampler="batched")


def _setup(n=60):
    src, tgt = toy_corpus(n, 0)
    pairs = list(zip(src, tgt, strict=True))
    gold = [{(i, j) for i, s in enumerate(a) for j, t in enumerate(b) if t == "t" + s[1:]}
            for a, b in pairs]
    return pairs, gold


def _precision(m, d, gold):
    links = direction_links(m, d)
    return sum(len(a & g) for a, g in zip(links, gold, strict=True)) / sum(map(len, links))


def _tiny(direction, stage, seed, max_cells=10**6, cfg=CFG):
    """Batches, states (one tensor per batch), counts and brute-force inputs for PAIRS."""
    corpus = encode_bitext(PAIRS, WordIds(), WordIds())
    fwd = direction == "fwd"
    v_gen = corpus.n_src_words if fwd else corpus.n_tgt_words
    v_obs = corpus.n_tgt_words if fwd else corpus.n_src_words
    gen, go = (corpus.src, corpus.src_off) if fwd else (corpus.tgt, corpus.tgt_off)
    obs, oo = (corpus.tgt, corpus.tgt_off) if fwd else (corpus.src, corpus.src_off)
    sents = [(gen[go[k]:go[k + 1]].tolist(), obs[oo[k]:oo[k + 1]].tolist())
             for k in range(len(PAIRS))]
    rng = np.random.default_rng(seed)
    a_lists = [[int(v) for v in rng.integers(-1, len(g), size=len(o))] for g, o in sents]
    batches = BT.make_batches(corpus, rev=not fwd, max_cells=max_cells)
    states = []
    for b in batches:
        a = torch.full(b["obs"].shape, -1, dtype=torch.long)
        for r, k in enumerate(b["rows"].tolist()):
            a[r, :len(a_lists[k])] = torch.tensor(a_lists[k])
        states.append(a)
    nb = 2 * cfg.max_jump + 1
    C = [torch.zeros(n, dtype=torch.float64) for n in (len(corpus.keys), v_gen, v_obs, nb)]
    C.append(torch.zeros(v_gen, cfg.max_fert + 1, dtype=torch.float64))
    for b, a in zip(batches, states, strict=True):
        BT._add(C, BT.state_counts(b, a, cfg, stage), 1)
    return batches, states, C, sents, a_lists, v_obs, nb


@pytest.mark.parametrize("direction", ["fwd", "rev"])
@pytest.mark.parametrize("stage", [1, 2, 3])
@pytest.mark.parametrize("js", [slice(None), slice(0, None, 2), slice(1, None, 2)])
@pytest.mark.parametrize("max_jump,max_cells", [(2, 10**6), (2, 12), (10, 10**6)])
def test_block_conditionals_equal_brute_force(direction, stage, js, max_jump, max_cells):
    """Every token's conditional in a block (all sentences of a padded batch at once) is the
    ratio of enumerated joints with that token's value changed, the counts of the whole
    corpus given (so the token's own lexical, NULL, jump and fertility counts are removed).
    max_jump 2: clamped jump buckets (compared per cell); 10: per-token point corrections."""
    cfg = replace(CFG, max_jump=max_jump)
    for seed in range(3):
        batches, states, C, sents, a_lists, v_obs, nb = _tiny(direction, stage, seed,
                                                              max_cells, cfg)
        checked = 0
        for b, a in zip(batches, states, strict=True):
            w, pn = BT.block_conditional(b, a, C, cfg, stage, v_obs, js)
            xs = list(range(a.shape[1]))[js]
            for r, k in enumerate(b["rows"].tolist()):
                gen, obs = sents[k]
                for col, x in enumerate(xs):
                    if x >= len(obs):
                        continue
                    exact = brute_conditional(sents, a_lists, k, x, cfg, stage, v_obs, nb)
                    got = np.concatenate([w[r, col, :len(gen)].numpy(), [pn[r, col].item()]])
                    assert (w[r, col, len(gen):] == 0).all()  # padding
                    np.testing.assert_allclose(got / got.sum(), exact, rtol=1e-9)
                    checked += 1
        assert checked == sum(len(list(range(len(o)))[js]) for _, o in sents)


def test_brute_force_check_can_fail():
    """Dropping the own-count removal changes the conditionals (the check above has teeth)."""
    batches, states, C, *_ , v_obs, _ = _tiny("fwd", 3, 0)
    b, a = batches[0], states[0]
    w, pn = BT.block_conditional(b, a, C, CFG, 3, v_obs, slice(None))
    C2 = [c.clone() for c in C]
    BT._add(C2, BT.state_counts(b, a, CFG, 3), 1)  # the batch's tokens counted twice
    w2, pn2 = BT.block_conditional(b, a, C2, CFG, 3, v_obs, slice(None))
    assert not torch.allclose(w / (w.sum(2, keepdim=True) + pn[..., None]),
                              w2 / (w2.sum(2, keepdim=True) + pn2[..., None]), atol=1e-3)


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_incremental_counts_equal_a_recount(stage):
    """After sampled blocks, the counts updated in place equal the counts of the new state."""
    for direction in ("fwd", "rev"):
        batches, states, C, _, _, v_obs, _ = _tiny(direction, stage, 4, max_cells=12)
        assert len(batches) > 1
        g = torch.Generator().manual_seed(0)
        for _ in range(3):
            for b, a in zip(batches, states, strict=True):
                for js in (slice(0, None, 2), slice(1, None, 2)):
                    BT._sweep_block(b, a, C, CFG, stage, v_obs, js, g, None)
        fresh = [torch.zeros_like(c) for c in C]
        for b, a in zip(batches, states, strict=True):
            BT._add(fresh, BT.state_counts(b, a, CFG, stage), 1)
        for c, f in zip(C, fresh, strict=True):
            torch.testing.assert_close(c, f)


@pytest.mark.parametrize("batch_cells", [200, 2_000_000])
def test_small_and_large_batches_learn_the_toy(batch_cells):
    """Small batches and one batch for the whole toy (blocks of all its tokens) both learn
    it perfectly (the earlier per-position sampler lost precision with one batch)."""
    pairs, gold = _setup()
    m = BayesAligner(BayesConfig(**FAST, batch_cells=batch_cells)).align(pairs, seed=0)
    for d in ("fwd", "rev"):
        assert _precision(m, d, gold) > 0.98
    for k in range(len(pairs)):  # marginals are probabilities per observed token
        assert (m.cells(k, "fwd").sum(0) <= 1 + 1e-5).all()
        assert (m.cells(k, "rev").sum(1) <= 1 + 1e-5).all()


def test_reproducible_from_the_seed():
    pairs, _ = _setup(30)
    a = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=5)
    b = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=5)
    c = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=6)
    np.testing.assert_array_equal(a.fwd, b.fwd)
    assert not np.array_equal(a.fwd, c.fwd)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_runs_and_learns():
    pairs, gold = _setup()
    m = BayesAligner(BayesConfig(**FAST, batch_cells=200, device="cuda")).align(pairs, seed=0)
    assert _precision(m, "fwd", gold) > 0.95


def test_cpu_threads_one_torch_thread_per_direction_then_restored():
    """Both direction threads run torch with 1 intra-op thread; the count is restored."""
    import threading

    before = torch.get_num_threads()
    seen = {}

    def run(k):
        torch.zeros(2).sum()  # the thread's own OpenMP state exists before entering
        with BT.cpu_threads("cpu"):
            barrier.wait()
            seen[k] = torch.get_num_threads()
            barrier.wait()

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {0: 1, 1: 1}
    assert torch.get_num_threads() == before


def _launches(run) -> int:
    """Kernel launches of `run()` counted as the project's GPU benchmark counts them; on the
    CPU (here) torch.profiler's computing leaf aten ops (views, allocations excluded)."""
    from benchmarks.gpu import Bench

    return Bench(device=torch.device("cpu")).count_kernels(run)


def _ops_per_sweep(pairs, max_cells):
    """Ops of one more stage-3 sweep of the forward direction: 2 sweeps minus 1."""
    corpus = encode_bitext(pairs, WordIds(), WordIds())
    batches = BT.make_batches(corpus, rev=False, max_cells=max_cells)
    cfg = BayesConfig(n_samplers=1, sampler="batched")
    priors = BayesAligner(cfg)._priors(corpus, "fwd")

    def run(k):
        g = torch.Generator().manual_seed(0)
        return lambda: BT.batched_direction(corpus, batches, priors, cfg, [0, 0, k], rev=False,
                                            generator=g, v_obs=corpus.n_tgt_words)

    with BT.cpu_threads("cpu"):
        return _launches(run(2)) - _launches(run(1)), len(batches)


def test_kernel_launches_per_sweep_do_not_grow_with_the_corpus():
    """N and 4N sentences (the corpus 4 times: the same length classes) cost the same
    launches per sweep (torch.profiler on the CPU): one batch per length class, not per
    budget of cells. Capping the batches (`max_cells`, the earlier layout's behaviour) makes
    them grow: the count has teeth."""
    src, tgt = toy_corpus(60, 1)
    pairs = [(src[k] + src[k - 1] * (k % 3), tgt[k] + tgt[k - 1] * (k % 3))
             for k in range(60)]  # 2 to ~20 tokens: 3 length classes
    (one, n1), (four, n4) = _ops_per_sweep(pairs, None), _ops_per_sweep(pairs * 4, None)
    assert one == four > 0 and n1 == n4 >= 3
    (one, n1), (four, n4) = _ops_per_sweep(pairs, 6_000), _ops_per_sweep(pairs * 4, 6_000)
    assert n4 > n1 and four > one


def test_make_batches_built_in_row_chunks_equal_one_pass(monkeypatch):
    """Pair ids gathered a few rows at a time (bounded host memory) equal one pass; every
    non-empty sentence lands in exactly one batch."""
    pairs, _ = _setup(80)
    corpus = encode_bitext(pairs, WordIds(), WordIds())
    for rev in (False, True):
        whole = BT.make_batches(corpus, rev=rev)
        monkeypatch.setattr(BT, "_HOST_CELLS", 40)
        parts = BT.make_batches(corpus, rev=rev)
        monkeypatch.undo()
        assert max(b["pair"][0].numel() for b in whole) > 40  # several chunks per batch
        for a, b in zip(whole, parts, strict=True):
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        rows = np.sort(np.concatenate([b["rows"].numpy() for b in whole]))
        assert rows.tolist() == list(range(len(pairs)))
