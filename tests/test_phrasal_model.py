"""Phrasal/gappy HSMM aligner: phrase lists, reduction to the word HMM, agreement, EM, export."""

import numpy as np
import pytest
import torch
from phrasal_dense_agreement import agreement_counts, dense_posteriors, link_posteriors, unrouted

import aligners
from aligners.data.bitext import build_index
from aligners.data.vocab import WordIds
from aligners.models.aligned import Decoding, RunOptions, parse_line
from aligners.models.gappy_hsmm._mine_kernel import mine_candidates
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.models.gappy_hsmm.decode import batch_link_matrices, fit_phrasal
from aligners.models.gappy_hsmm.folder import PhrasalAligned, PhrasalBundle
from aligners.models.gappy_hsmm.init import build_phrasal_aligner
from aligners.models.gappy_hsmm.layout import make_layout
from aligners.models.gappy_hsmm.model import PhrasalAligner
from aligners.models.gappy_hsmm.phrase_lists import PhraseList, rank_phrases
from aligners.models.gappy_hsmm.prepared import ReuseCache, tensor_bytes
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner


def phrasal_toy(n=150, seed=0):
    """Bitext with a 1-3 phrase (rail <-> chemin de fer) and a gappy one (not <-> ne ... pas)."""
    rng = np.random.default_rng(seed)
    lex = {f"e{k}": [f"f{k}"] for k in range(8)}
    lex["rail"] = ["chemin", "de", "fer"]
    src, tgt = [], []
    for _ in range(n):
        s = [f"e{k}" for k in rng.integers(0, 8, size=rng.integers(2, 6))]
        if rng.random() < 0.5:
            s.insert(int(rng.integers(0, len(s) + 1)), "rail")
        t = [w for x in s for w in lex[x]]
        if rng.random() < 0.5:
            k = int(rng.integers(0, len(s)))
            s.insert(k, "not")
            pos = sum(len(lex[x]) for x in s[:k])
            t = t[:pos] + ["ne", t[pos], "pas"] + t[pos + 1:]
        src.append(s)
        tgt.append(t)
    return src, tgt


def _links(aligned, method, threshold, heuristic):
    """Per pair, the links of the "sym" lines that `aligned` (an `Aligned`) writes."""
    lines = aligned.lines(("sym",), Decoding(method, threshold, heuristic))["sym"]
    return [parse_line(x)[0] for x in lines]


def _matrices(model, index):
    """(forward, backward) link matrices of every batched pair of `index`, in batch order."""
    return [(lf, lb) for chunk in batch_link_matrices(model, index) for _, lf, lb in chunk]


def _word_model(src, tgt, *, p0=0.3, cells=3000):
    si, ti = WordIds(), WordIds()
    index = build_index(zip(src, tgt), si, ti, cells=cells)
    wa = WordAligner.from_index(index, WordAlignConfig(agreement=False, p0=p0, ibm1_iterations=3,
                                                       hmm_iterations=3, max_jump=4))
    wa.fit(index)
    return wa, index, si, ti


@pytest.fixture(scope="module")
def trained():
    src, tgt = phrasal_toy()
    wa, index, si, ti = _word_model(src, tgt)
    model, stats = build_phrasal_aligner(wa, index, PhrasalConfig(n_contiguous=10, n_gappy=4,
                                                                   iterations=3))
    hist = fit_phrasal(model, index)
    return model, stats, hist, index, si, ti, wa


def test_span_and_gappy_matching_equal_brute_force():
    V = 9
    lst = PhraseList(torch.tensor([[1, 2, -1], [2, 3, 4], [5, 5, -1]]),
                     torch.tensor([[1, 4], [6, 6]]), V, 3)
    g = torch.Generator().manual_seed(0)
    words = torch.randint(0, V, (6, 8), generator=g)
    lengths = torch.tensor([8, 5, 3, 1, 7, 8])
    spans, gaps = lst.match_spans(words, lengths), lst.match_gappy(words, lengths)
    contig = {(1, 2): 0, (2, 3, 4): 1, (5, 5): 2}
    for b in range(6):
        w = words[b].tolist()
        for n in range(8):
            for ln in range(3):
                ph = tuple(w[n - ln:n + 1]) if n - ln >= 0 and n < lengths[b] else None
                want = V + contig[ph] if ln > 0 and ph in contig else -1
                assert int(spans[b, n, ln]) == want
            for c in range(8):
                ok = c > n + 1 and c < lengths[b]
                want = {(1, 4): 0, (6, 6): 1}.get((w[n], w[c])) if ok else None
                assert int(gaps[b, n, c]) == (-1 if want is None else V + 3 + want)


def test_mining_conditions():
    # obs 0..5 aligned to states; ne(0) X(1) pas(2) with X aligned elsewhere -> gappy
    obs = torch.tensor([[10, 11, 12, 13, 13, 14]])
    align = torch.tensor([[0, 1, 0, 2, 2, -1]])
    contig, (keys, where) = mine_candidates(obs, align, torch.tensor([6]), max_len=3,
                                            n_words=100)
    assert contig[2].tolist() == [[13, 13]]
    assert contig[3].numel() == 0
    assert keys.tolist() == [10 * 100 + 12] and where.tolist() == [[0, 0, 2, 0]]
    # the word between is NULL-aligned: no gappy instance
    _, (keys, _) = mine_candidates(obs, torch.tensor([[0, -1, 0, 2, 2, -1]]),
                                   torch.tensor([6]), max_len=2, n_words=100)
    assert keys.numel() == 0
    # the state has a third observation: no gappy instance
    _, (keys, _) = mine_candidates(obs, torch.tensor([[0, 1, 0, 0, 2, -1]]),
                                   torch.tensor([6]), max_len=2, n_words=100)
    assert keys.numel() == 0
    assert rank_phrases(torch.tensor([[0], [1], [2]]), [10, 3, 1], [20, 3, 1], top=2,
                        discount=0.5).tolist() == [[1], [2]]  # 2.5/3 > 0.5/1 > 9.5/20


def test_without_phrases_the_model_is_the_word_hmm():
    src, tgt = phrasal_toy(40, seed=1)
    wa, index, _, _ = _word_model(src, tgt, p0=0.3)
    cfg = PhrasalConfig(n_contiguous=0, n_gappy=0, p0=0.3)
    model, stats = build_phrasal_aligner(wa, index, cfg)
    assert stats["mean_phrases_matched"] == 0
    for k in range(len(index)):
        b = index.batch(k)
        lay = make_layout(b, model.src_list, model.tgt_list, gappy=True)
        pf, pb = dense_posteriors(model, b, lay)
        ref = wa.posteriors(b, stage="hmm")
        ll = torch.stack([pf.log_likelihood.sum(), pb.log_likelihood.sum()]).double()
        assert torch.allclose(ll, ref.log_likelihood, rtol=1e-4)
        lf, lb = model.link_posteriors(model.prepare(b, lay))
        assert torch.allclose(lf, ref.links_fwd, atol=1e-4)
        assert torch.allclose(lb, ref.links_bwd, atol=1e-4)


def test_phrases_are_mined_and_matched(trained):
    model, stats, hist, index, si, ti, _ = trained
    tgt_c = [[ti.words[w] for w in r if w >= 0] for r in model.tgt_list.contiguous.tolist()]
    assert ["chemin", "de", "fer"] in tgt_c
    tgt_g = [[ti.words[w] for w in r] for r in model.tgt_list.gappy.tolist()]
    assert ["ne", "pas"] in tgt_g
    assert 0 < stats["mean_phrases_matched"] < 10
    assert all(np.isfinite(x) for h in hist for x in h)


def test_mirrored_edges_get_the_same_agreement_count(trained):
    model, _, _, index, _, _, _ = trained
    b = index.batch(len(index) - 1)
    lay = make_layout(b, model.src_list, model.tgt_list, gappy=True)
    pf, pb = dense_posteriors(model, b, lay)
    qf, qb = agreement_counts(pf, pb, lay, agreement=True, src_lengths=b.src_lengths,
                              tgt_lengths=b.tgt_lengths)
    first, last, _, gap = lay.ph_bwd
    checked = 0
    for r, p in zip(*((first >= 0) & (gap == 0)).nonzero(as_tuple=True)):
        j1, j2 = int(first[r, p]), int(last[r, p])
        for i in range(int(b.src_lengths[r])):
            assert torch.isclose(qf.word[r, j2, j2 - j1, i], qb.phrase[r, i, p], atol=1e-6)
            checked += 1
    assert checked > 0
    prod = pf.word[:, :, 0].transpose(1, 2) * pb.word[:, :, 0]  # (B, I, J)
    # word links: the product, plus the other direction's gappy edges mixed in (never less)
    assert (qf.word[:, :, 0].transpose(1, 2) >= prod - 1e-6).all()
    assert (qb.word[:, :, 0] >= prod - 1e-6).all()
    assert not torch.allclose(qf.word[:, :, 0].transpose(1, 2), prod)  # target gappy states
    for q in (qf, qb):
        assert float(q.null.min()) >= 0 and torch.isfinite(q.word).all()
    pf2, _ = agreement_counts(pf, pb, lay, agreement=False, src_lengths=b.src_lengths,
                              tgt_lengths=b.tgt_lengths)
    assert torch.equal(pf2.word, pf.word)


def test_tables_are_normalised(trained):
    model = trained[0]
    for fwd, t in ((True, model.t_fwd), (False, model.t_bwd)):
        g = model.givens(forward=fwd)
        n = model.src_list.n_units if fwd else model.tgt_list.n_units
        body = torch.ones_like(t, dtype=torch.bool)
        body[model.word_keys.numel()] = False
        tot = torch.zeros(n, dtype=torch.float64).index_add_(0, g[body], t[body].double())
        used = tot > 1e-6
        assert torch.allclose(tot[used], torch.ones_like(tot[used]), atol=1e-4)


def test_gappy_links_are_decoded(trained):
    model, _, _, index, si, ti, _ = trained
    from aligners.models.hmm.folder import WordAligned

    aligned = PhrasalAligned(model, index, RunOptions())
    links = _links(aligned, "agreement", 0.3, "none")
    vit = _links(aligned, "viterbi", 0.5, "union")
    src, tgt = phrasal_toy()
    base = _links(WordAligned(trained[6], index, RunOptions()), "viterbi", 0.5, "union")

    def ne_pas(decoded):
        hit = total = 0
        for s, t, lk in zip(src, tgt, decoded):
            if "not" in s:
                i = s.index("not")
                total += 1
                hit += (i, t.index("ne")) in lk and (i, t.index("pas")) in lk
        return hit, total

    (hit, total), (hit0, _) = ne_pas(vit), ne_pas(base)
    assert total > 20 and hit >= 5 and hit > hit0  # (10 vs 1 of 78 when written)
    assert len(links) == len(src)


def test_export_round_trip(trained, tmp_path):
    model, _, _, index, si, ti, _ = trained
    PhrasalBundle(model, si, ti).save_to(tmp_path / "m", {
        "method": "agreement", "threshold": 0.3, "heuristic": "none"})
    bundle = aligners.load(tmp_path / "m")
    src, tgt = phrasal_toy()
    want = _links(PhrasalAligned(model, index, RunOptions()), "agreement", 0.3, "none")
    assert bundle.align(src, tgt) == want


def test_new_pairs_with_unseen_words_align(trained):
    model, _, _, _, si, ti, _ = trained
    si.frozen = ti.frozen = True
    index = build_index([(["zz", "e1", "not", "e2"], ["f1", "ne", "f2", "pas", "yy"])], si, ti,
                        keys=model.word_keys)
    (lf, lb), = _matrices(model, index)
    assert lf.shape == (4, 5) and np.isfinite(lf).all() and np.isfinite(lb).all()


def test_model_runs_on_cuda_like_cpu(trained):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    model, _, _, index, *_ = trained
    cpu = _matrices(model, index)
    gpu_model = PhrasalAligner.__new__(PhrasalAligner)
    gpu_model.__dict__.update(model.__dict__)
    model.cuda()
    try:
        gpu = _matrices(model, index)
    finally:
        model.cpu()
    for (a, b), (c, d) in zip(cpu, gpu):
        assert np.allclose(a, c, atol=1e-4) and np.allclose(b, d, atol=1e-4)


def _double_copy(model):
    import copy

    m = copy.deepcopy(model).double()
    m.reset_counts()
    return m


def test_word_rows_routed_to_the_word_hmm_equal_the_phrasal_lattice(trained):
    from aligners.models.gappy_hsmm.routing import phrase_rows, take_rows, word_row_posteriors

    model = _double_copy(trained[0])
    index = trained[3]
    checked = 0
    for k in range(len(index)):
        b = index.batch(k)
        lay = make_layout(b, model.src_list, model.tgt_list, gappy=True)
        rows = (~phrase_rows(lay)).nonzero()[:, 0]
        if rows.numel() == 0:
            continue
        wb = take_rows(b, rows)
        wlay = make_layout(wb, model.src_list, model.tgt_list, gappy=True)
        assert wlay.n_matched() == 0 and (wlay.span_src < 0).all() and (wlay.span_tgt < 0).all()
        pf, pb = dense_posteriors(model, wb, wlay)
        lf, lb = model.link_posteriors(unrouted(model, wb, wlay))
        w = word_row_posteriors(model, wb)
        assert torch.allclose(w.loglik_fwd, pf.log_likelihood, atol=1e-6, rtol=0)
        assert torch.allclose(w.loglik_bwd, pb.log_likelihood, atol=1e-6, rtol=0)
        assert torch.allclose(w.links_fwd, lf, atol=1e-6, rtol=0)
        assert torch.allclose(w.links_bwd, lb, atol=1e-6, rtol=0)
        assert torch.allclose(w.null_fwd, pf.null, atol=1e-6, rtol=0)
        assert torch.allclose(w.null_bwd, pb.null, atol=1e-6, rtol=0)
        v = word_row_posteriors(model, wb, viterbi=True)
        vf, vb = model.link_posteriors(unrouted(model, wb, wlay), viterbi=True)
        assert torch.equal(v.links_fwd, vf) and torch.equal(v.links_bwd, vb)
        checked += rows.numel()
    assert checked > 20


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-9), (torch.float32, 2e-5)])
def test_mixed_batches_give_the_same_counts_and_links_routed_or_not(trained, dtype, tol):
    from aligners.models.gappy_hsmm.routing import phrase_rows

    model = _double_copy(trained[0]).to(dtype)
    index = trained[3]
    mixed = 0
    for k in range(len(index)):
        b = index.batch(k)
        lay = make_layout(b, model.src_list, model.tgt_list, gappy=True)
        has = phrase_rows(lay)
        mixed += bool(has.any()) and not bool(has.all())
        got = []
        for prep in (model.prepare(b, lay), unrouted(model, b, lay)):
            model.reset_counts()
            model.accumulate(prep)
            links = model.link_posteriors(prep)
            vit = model.link_posteriors(prep, viterbi=True)
            got.append([model.c_fwd, model.c_bwd, model.c_null_tgt, model.c_null_src,
                        model.c_loglik, *links, *vit])
        for x, y in zip(*got):
            assert x.shape == y.shape
            assert torch.allclose(x.to(y.dtype), y, atol=tol, rtol=tol)
    assert mixed >= 1


def _tight_keys_reference(f, b, I, J, ss, st, sw, tw, Ut):
    """The keys of one pair from `aligners.symmetrize` and dictionaries (the definition)."""
    from aligners.symmetrize import symmetrize

    links = symmetrize([(i, j) for j, i in enumerate(f[:J]) if i >= 0],
                       [(i, j) for i, j in enumerate(b[:I]) if j >= 0], "grow-diag-final")
    by_s, by_t, keys = {}, {}, []
    for i, j in links:
        by_s.setdefault(i, []).append(j)
        by_t.setdefault(j, []).append(i)
    for i, js in by_s.items():
        lo, hi = min(js), max(js)
        if hi > lo and all(by_t.get(j, [i]) == [i] for j in range(lo, hi + 1)):
            if hi - lo < st.shape[1] and st[hi, hi - lo] >= 0:
                keys.append(sw[i] * Ut + int(st[hi, hi - lo]))
    for j, is_ in by_t.items():
        lo, hi = min(is_), max(is_)
        if hi > lo and all(by_s.get(i, [j]) == [j] for i in range(lo, hi + 1)):
            if hi - lo < ss.shape[1] and ss[hi, hi - lo] >= 0:
                keys.append(int(ss[hi, hi - lo]) * Ut + tw[j])
    return sorted(keys)


def test_tight_phrase_keys_kernel_equals_the_symmetrize_reference():
    from aligners.models.gappy_hsmm._init_kernel import tight_phrase_keys

    g = np.random.default_rng(3)
    R, I, J, L, Ut = 300, 9, 10, 4, 50
    sl, tl = g.integers(1, I + 1, R), g.integers(1, J + 1, R)
    # Viterbi-like alignments: mostly near the diagonal, some NULL (-1), some 1-many runs
    f = np.where(g.random((R, J)) < 0.2, -1, np.clip(np.arange(J)[None] * sl[:, None] // tl[
        :, None] + g.integers(-1, 2, (R, J)), 0, None))
    f = np.where(f < sl[:, None], f, -1)
    b = np.where(g.random((R, I)) < 0.2, -1, np.clip(np.arange(I)[None] * tl[:, None] // sl[
        :, None] + g.integers(-1, 2, (R, I)), 0, None))
    b = np.where(b < tl[:, None], b, -1)
    ss = np.where(g.random((R, I, L)) < 0.5, g.integers(0, Ut, (R, I, L)), -1)
    st = np.where(g.random((R, J, L)) < 0.5, g.integers(0, Ut, (R, J, L)), -1)
    ss[:, :, 0] = st[:, :, 0] = -1
    sw, tw = g.integers(0, 40, (R, I)), g.integers(0, Ut, (R, J))
    got = tight_phrase_keys(f, b, sl, tl, ss, st, sw, tw, Ut)
    want = [k for r in range(R) for k in _tight_keys_reference(
        f[r], b[r], sl[r], tl[r], ss[r], st[r], sw[r], tw[r], Ut)]
    assert len(want) > 100
    assert sorted(got.tolist()) == sorted(want)
    for r in range(20):  # per pair too
        one = tight_phrase_keys(f[r:r + 1], b[r:r + 1], sl[r:r + 1], tl[r:r + 1], ss[r:r + 1],
                                st[r:r + 1], sw[r:r + 1], tw[r:r + 1], Ut)
        assert sorted(one.tolist()) == _tight_keys_reference(
            f[r], b[r], sl[r], tl[r], ss[r], st[r], sw[r], tw[r], Ut)


def test_mining_viterbi_equals_the_word_models_viterbi(trained):
    from aligners.models.gappy_hsmm.init import word_viterbi

    wa, index = trained[6], trained[3]
    got = word_viterbi(wa, index)
    for k in range(len(index)):
        f, b = wa.viterbi(index.batch(k))
        assert torch.equal(got[k][0], f.int()) and torch.equal(got[k][1], b.int())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sparse_agreement_and_links_equal_the_dense_functions(trained, dtype):
    """The E-step's sparse agreement counts and link posteriors equal the dense oracle's
    `agreement_counts` / `link_posteriors` on the dense form of the same posteriors, bit for
    bit."""
    from aligners.lattices.phrasal_hsmm_sparse import sparse_posteriors_to_dense
    from aligners.models.gappy_hsmm.agreement import sparse_agreement_counts, sparse_link_posteriors

    model = _double_copy(trained[0]).to(dtype)
    index, L = trained[3], model.config.max_phrase_len
    segs = 0
    for k in range(len(index)):
        b = index.batch(k)
        lay = make_layout(b, model.src_list, model.tgt_list, gappy=True)
        prep = unrouted(model, b, lay)
        pf, pb = model._sparse(prep, b)
        df, db = prep.fwd, prep.bwd
        dense = [sparse_posteriors_to_dense(p, model._potentials(d, b), L)
                 for p, d in ((pf, df), (pb, db))]
        for agree in (True, False):
            qf, qb = sparse_agreement_counts(pf, pb, df, db, agreement=agree)
            rf, rb = agreement_counts(*dense, lay, agreement=agree, src_lengths=b.src_lengths,
                                      tgt_lengths=b.tgt_lengths)
            for q, r, d in ((qf, rf, df), (qb, rb, db)):
                word, seg = q.word
                assert torch.equal(word, r.word[:, :, 0])
                assert torch.equal(seg, r.word[d.seg_item, d.seg_end, d.seg_len])
                assert torch.equal(q.phrase, r.phrase) and torch.equal(q.null, r.null)
                mask = torch.ones_like(r.word, dtype=torch.bool)
                mask[:, :, 0] = False
                mask[d.seg_item, d.seg_end, d.seg_len] = False
                assert float(r.word[mask].abs().sum()) == 0  # nothing outside the listed spans
        for x, y in zip(sparse_link_posteriors(pf, pb, df, db), link_posteriors(*dense, lay)):
            assert torch.equal(x, y)
        segs += df.seg_item.numel() + db.seg_item.numel()
    assert segs > 10


@pytest.mark.parametrize("budget", ["all", "one", "none"])
def test_prepared_batches_reused_across_iterations_give_the_same_training(trained, budget):
    """fit_phrasal with batches prepared once and kept (all of them, only the first that
    fits a one-batch budget, none: a zero budget) equals preparing every batch again in
    every iteration (tables and log-likelihoods, bit for bit); the cache holds what its
    budget allows and counts its bytes."""
    import copy

    model0, index = trained[0], trained[3]
    a, b = copy.deepcopy(model0), copy.deepcopy(model0)
    for m in (a, b):
        m.iteration.zero_()
        m.config.iterations = 3
        m.reset_counts()
    sizes = [tensor_bytes(a.prepare(index.batch(k), make_layout(
        index.batch(k), a.src_list, a.tgt_list, gappy=True))) for k in range(len(index))]
    assert len(sizes) > 1 and min(sizes) > 0
    cache = ReuseCache({"all": sum(sizes), "one": sizes[0], "none": 0}[budget])
    ha = fit_phrasal(a, index, prepared=cache)
    assert sorted(cache) == {"all": list(range(len(index))), "one": [0], "none": []}[budget]
    assert cache.used == tensor_bytes(cache) <= cache.budget
    hb = []
    for _ in range(3):  # fresh preparation per iteration
        b.reset_counts()
        for k in range(len(index)):
            bt = index.batch(k)
            b.accumulate(b.prepare(bt, make_layout(bt, b.src_list, b.tgt_list, gappy=True)))
        hb.append(b.m_step().tolist())
    assert ha == hb
    assert torch.equal(a.t_fwd, b.t_fwd) and torch.equal(a.t_bwd, b.t_bwd)
    assert torch.equal(a.null_tgt, b.null_tgt)


def test_log_tables_follow_in_place_changes(trained):
    model = _double_copy(trained[0])
    index = trained[3]
    b = index.batch(0)
    lay = make_layout(b, model.src_list, model.tgt_list, gappy=True)
    prep = unrouted(model, b, lay)  # every row on the phrasal lattice
    before = model.link_posteriors(prep)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.t_fwd.mul_(0.5).add_(1e-3)  # in place: the cached log table must not be reused
    changed = model.link_posteriors(prep)
    assert not torch.equal(before[0], changed[0])
    model.load_state_dict(state)
    assert all(torch.equal(x, y) for x, y in zip(model.link_posteriors(prep), before))


def test_gappy_counter_kernel_equals_the_match_gappy_counts():
    from aligners.models.gappy_hsmm.mining import _GappyCounter

    g = torch.Generator().manual_seed(6)
    V = 15
    keys = torch.unique(torch.randint(0, V * V, (50,), generator=g))
    lst = PhraseList(torch.zeros(0, 3, dtype=torch.long), torch.stack([keys // V, keys % V], 1),
                     V, 3)
    counter, want = _GappyCounter(keys, V), torch.zeros(keys.numel(), dtype=torch.long)
    for B, N in ((20, 7), (11, 13), (1, 1)):  # several batches, padded rows, a 1-word one
        words = torch.randint(0, V, (B, N), generator=g)
        lengths = torch.randint(1, N + 1, (B,), generator=g)
        counter.add(words, lengths)
        gp = lst.match_gappy(words, lengths)
        want += torch.bincount(gp[gp >= 0] - V, minlength=keys.numel())
    assert want.sum() > 30 and np.array_equal(counter.counts, want.numpy())
    empty = _GappyCounter(torch.zeros(0, dtype=torch.long), V)
    empty.add(words, lengths)
    assert empty.counts.shape == (0,)


def test_gappy_units_equal_the_match_gappy_table():
    g = torch.Generator().manual_seed(7)
    V, B, N = 10, 25, 8
    words = torch.randint(0, V, (B, N), generator=g)
    lengths = torch.randint(1, N + 1, (B,), generator=g)
    keys = torch.unique(torch.randint(0, V * V, (30,), generator=g))
    lst = PhraseList(torch.tensor([[1, 2, -1]]), torch.stack([keys // V, keys % V], 1), V, 3)
    table = lst.match_gappy(words, lengths)
    rb, ra, rc = torch.ones(B, N, N, dtype=torch.bool).nonzero(as_tuple=True)
    ok = (ra + 1 < rc) & (rc < lengths[rb])
    rb, ra, rc = rb[ok], ra[ok], rc[ok]
    got = lst.gappy_units(words, rb, ra, rc)
    assert (got >= 0).sum() > 10 and torch.equal(got, table[rb, ra, rc])
    empty = PhraseList(torch.tensor([[1, 2, -1]]), torch.zeros(0, 2, dtype=torch.long), V, 3)
    assert bool((empty.gappy_units(words, rb, ra, rc) == -1).all())


def test_span_counter_equals_the_match_spans_counts():
    from aligners.models.gappy_hsmm.mining import _SpanCounter

    g = torch.Generator().manual_seed(8)
    V, L = 6, 4
    words = [torch.randint(0, V, (B, N), generator=g) for B, N in ((30, 9), (12, 5), (3, 2))]
    lengths = [torch.randint(1, w.shape[1] + 1, (w.shape[0],), generator=g) for w in words]
    rows = []  # every span of the first batch up to length L, deduplicated
    for w, ln in zip(words[:1], lengths[:1]):
        for b in range(w.shape[0]):
            for a in range(int(ln[b])):
                for m in range(2, L + 1):
                    if a + m <= int(ln[b]):
                        rows.append(tuple(w[b, a:a + m].tolist()) + (-1,) * (L - m))
    rows = torch.tensor(sorted(set(rows)))
    cand = PhraseList(rows, torch.zeros(0, 2, dtype=torch.long), V, L)
    counter, want = _SpanCounter(rows, L), torch.zeros(rows.shape[0], dtype=torch.long)
    for w, ln in zip(words, lengths):
        counter.add(w, ln)
        sp = cand.match_spans(w, ln)
        want += torch.bincount(sp[sp >= 0] - V, minlength=rows.shape[0])
    assert want.sum() > 100 and np.array_equal(counter.counts, want.numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gather2_equals_index_select_of_each_column(dtype):
    from aligners.models.gappy_hsmm._counts_kernel import gather2

    g = torch.Generator().manual_seed(5)
    tables = torch.rand(50, 2, generator=g, dtype=dtype)
    ids = torch.randint(0, 50, (3, 4, 6), generator=g, dtype=torch.int32)
    a, b = gather2(tables, ids)
    assert a.shape == ids.shape and a.dtype == dtype
    assert torch.equal(a, tables[:, 0].index_select(0, ids.reshape(-1)).view(ids.shape))
    assert torch.equal(b, tables[:, 1].index_select(0, ids.reshape(-1)).view(ids.shape))
    assert not torch.equal(a, b)
    with pytest.raises(IndexError, match="outside"):
        gather2(tables, ids + 50)


def test_pair_tables_follow_the_tables(trained):
    model = _double_copy(trained[0])
    tab = model.pair_tables()
    assert torch.equal(tab, torch.stack([model.t_fwd, model.t_bwd], 1))
    assert torch.equal(model.pair_tables(log=True), torch.stack(
        [torch.log(model.t_fwd), torch.log(model.t_bwd)], 1))
    assert model.pair_tables() is tab
    model.t_bwd.mul_(0.5)
    assert torch.equal(model.pair_tables()[:, 1], model.t_bwd)
    assert torch.equal(model.pair_tables(log=True)[:, 1], torch.log(model.t_bwd))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normalise_kernel_equals_the_torch_expression(trained, dtype):
    from aligners.models.gappy_hsmm._counts_kernel import normalise_counts

    model = trained[0]
    P = model.word_keys.numel()
    g = torch.Generator().manual_seed(7)
    for forward in (True, False):
        givens = model.givens(forward=forward)
        n = model.src_list.n_units if forward else model.tgt_list.n_units
        counts = torch.rand(givens.numel(), 2, generator=g, dtype=dtype) * 10 ** torch.randint(
            -8, 8, (givens.numel(), 2), generator=g).to(dtype)
        counts[givens == givens[0]] = 0  # a unit with total 0: its slots get the floor
        col = counts[:, 1]  # strided, as the model's c_bwd
        tot = torch.zeros(n, dtype=dtype).index_add_(0, givens, col)
        den = tot[givens]
        want = torch.where(den > 0, col / den.clamp_min(torch.finfo(dtype).tiny),
                           torch.zeros((), dtype=dtype))
        want[P] = 1e-20
        want = want.clamp_min(1e-20)
        got = normalise_counts(col, model.word_keys, model.phrase_keys, model.n_tgt_words,
                               model.n_tgt_units, n, 1e-20, forward=forward)
        assert torch.equal(got, want)
        assert normalise_counts(col, model.word_keys.int(), model.phrase_keys,
                                model.n_tgt_words, model.n_tgt_units, n, 1e-20,
                                forward=forward) is None  # the torch path then
        with pytest.raises(ValueError, match="outside"):
            normalise_counts(col, model.word_keys, model.phrase_keys, model.n_tgt_words,
                             model.n_tgt_units, 1, 1e-20, forward=forward)


def test_phrase_ids_equal_a_dictionary_lookup(trained):
    model = trained[0]
    P, Ut = model.word_keys.numel(), model.n_tgt_units
    slot = {int(k): P + 1 + n for n, k in enumerate(model.phrase_keys.tolist())}
    g = torch.Generator().manual_seed(11)
    hits = model.phrase_keys[torch.randint(0, model.phrase_keys.numel(), (40,), generator=g)]
    su = torch.cat([hits // Ut, torch.randint(-2, model.src_list.n_units, (60,), generator=g)])
    tu = torch.cat([hits % Ut, torch.randint(-2, Ut, (60,), generator=g)])
    su, tu = su.view(4, 25), tu.view(4, 25)
    got = model.phrase_ids(su, tu)
    want = [slot.get(int(s) * Ut + int(t), P) if s >= 0 and t >= 0 else P
            for s, t in zip(su.reshape(-1).tolist(), tu.reshape(-1).tolist())]
    assert got.shape == su.shape and got.dtype == torch.long and got.reshape(-1).tolist() == want
    assert int((got > P).sum()) >= 40


def test_layouts_handed_over_by_the_build_equal_matching_again_and_train_the_same():
    """build_phrasal_aligner(layouts=) hands each batch's compact layout to the first EM
    iteration: every expanded layout equals make_layout's (each field, dtype and shape), and
    fit_phrasal with them trains bit for bit as without; each used entry is dropped."""
    src, tgt = phrasal_toy()
    wa, index, _, _ = _word_model(src, tgt)
    cfg = PhrasalConfig(n_contiguous=10, n_gappy=4, iterations=2)
    layouts = ReuseCache()
    a, _ = build_phrasal_aligner(wa, index, cfg, layouts=layouts)
    b, _ = build_phrasal_aligner(wa, index, cfg)
    assert len(layouts) == len(index) and len(index) > 1
    n_spans = 0
    for k in range(len(index)):
        bt = index.batch(k)
        ref = make_layout(bt, a.src_list, a.tgt_list, gappy=True)
        got = layouts[k].expand("cpu")
        for x, y in zip((got.span_src, got.span_tgt, got.span_state_src, got.span_state_tgt,
                         *got.ph_fwd, *got.ph_bwd),
                        (ref.span_src, ref.span_tgt, ref.span_state_src, ref.span_state_tgt,
                         *ref.ph_fwd, *ref.ph_bwd)):
            assert x.dtype == y.dtype and torch.equal(x, y)
        n_spans += int((ref.span_tgt >= 0).sum() + (ref.span_state_tgt >= 0).sum()
                       + (ref.ph_fwd[0] >= 0).sum() + (ref.ph_bwd[0] >= 0).sum())
    assert n_spans > 0
    assert layouts.used == tensor_bytes(layouts) > 0
    ha = fit_phrasal(a, index, layouts=layouts)
    hb = fit_phrasal(b, index)
    assert len(layouts) == 0 and layouts.used == 0
    assert ha == hb
    for name in ("t_fwd", "t_bwd", "null_tgt", "null_src"):
        assert torch.equal(getattr(a, name), getattr(b, name))


@pytest.mark.parametrize("n,V", [(2, 3), (3, 40), (4, 50000), (5, 50000), (1, 7)])
def test_unique_rows_equals_unique_dim(n, V):
    """The packed-key unique of the mined spans: same rows, order, counts and dtypes as
    torch.unique(dim=0) (n=5 with V=50000 takes the fallback)."""
    from aligners.models.gappy_hsmm.mining import _unique_rows

    g = torch.Generator().manual_seed(n)
    x = torch.randint(0, V, (3000, n), generator=g)
    x[1000:1500] = x[:500]
    want, got = torch.unique(x, dim=0, return_counts=True), _unique_rows(x)
    for a, b in zip(want, got):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert int(want[1].max()) > 1


def test_numba_mining_equals_mine_candidates():
    """`_mine_kernel.mine_candidates` gives the torch reference's outputs exactly (spans per
    length in (item, start) order, gappy keys and instances in (item, a, c) order, dtypes),
    on random and monotone alignments with ragged lengths, states beyond the observation
    length, and max_len 1, 3, 5."""
    from phrasal_mine_reference import mine_candidates as reference

    g = torch.Generator().manual_seed(1)
    n_gappy = n_spans = 0
    for trial in range(30):
        B = 17
        N = int(torch.randint(1, 20, (1,), generator=g))
        S = int(torch.randint(1, 25, (1,), generator=g))
        obs = torch.randint(0, 50, (B, N), generator=g)
        al = torch.randint(-1, S, (B, N), generator=g)
        if trial % 2:
            al = torch.sort(al, 1).values  # long runs of one state
        ln = torch.randint(1, N + 1, (B,), generator=g)
        for L in (1, 3, 5):
            c1, (k1, w1) = reference(obs, al, ln, max_len=L, n_words=50)
            c2, (k2, w2) = mine_candidates(obs, al, ln, max_len=L, n_words=50)
            assert c1.keys() == c2.keys()
            for k in c1:
                assert c1[k].dtype == c2[k].dtype and torch.equal(c1[k], c2[k])
                n_spans += c1[k].shape[0]
            assert k1.dtype == k2.dtype and w1.dtype == w2.dtype
            assert torch.equal(k1, k2) and torch.equal(w1, w2)
            n_gappy += k1.numel()
    assert n_gappy > 10 and n_spans > 10
