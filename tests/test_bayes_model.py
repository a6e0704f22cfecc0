"""The Bayesian aligner end to end: learns the toy bitext, priors move the result the expected
way, seeds reproduce, save/load round trip and the priors workflow, CLI, bad input."""

import json

import numpy as np
import pytest
from bayes_dense import cells, dense, pair_ids
from word_toy import toy_corpus

from aligners import export
from aligners.cli import main
from aligners.config_checks import check
from aligners.errors import AlignersInputError
from aligners.models.aligned import parse_line
from aligners.models.bayesian import BayesAligner, BayesConfig, schedule
from aligners.models.bayesian.decode import link_lines
from aligners.models.bayesian.folder import BayesianAlignment

FAST = dict(iterations=[3, 3, 8], n_samplers=2)


def _pairs(n=60, seed=0):
    src, tgt = toy_corpus(n, seed)
    return list(zip(src, tgt, strict=True))


def _gold(pairs):
    """The toy's true links: t{k} translates s{k} (fillers unaligned); ambiguous repeats of
    a word are all counted."""
    return [{(i, j) for i, s in enumerate(src) for j, t in enumerate(tgt) if t == "t" + s[1:]}
            for src, tgt in pairs]


def _sets(m, **decoding):
    """Per sentence, the set of links that `link_lines(m, **decoding)` writes."""
    return [set(parse_line(x)[0]) for x in link_lines(m, **decoding)]


def _precision(links, gold):
    hit = sum(len(a & g) for a, g in zip(links, gold, strict=True))
    return hit / max(1, sum(len(a) for a in links))


def test_learns_the_toy_bitext_in_both_directions():
    pairs = _pairs()
    m = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=1)
    gold = _gold(pairs)
    for d in ("fwd", "rev"):
        assert _precision(_sets(m, direction=d), gold) > 0.9
    sym = _sets(m, heuristic="intersect")
    assert _precision(sym, gold) > 0.95
    for k in range(len(pairs)):  # marginals are probabilities, per observed token <= 1
        assert (cells(m, k, "fwd").sum(0) <= 1 + 1e-5).all()
        assert (cells(m, k, "rev").sum(1) <= 1 + 1e-5).all()
        assert (cells(m, k, "fwd") >= 0).all()


def test_same_seed_same_marginals_other_seed_differs():
    pairs = _pairs(30)
    a = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=3)
    b = BayesAligner(BayesConfig(**FAST, threads=1)).align(pairs, seed=3)
    c = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=4)
    # threads do not change the result
    np.testing.assert_array_equal(dense(a, "fwd"), dense(b, "fwd"))
    np.testing.assert_array_equal(dense(a, "rev"), dense(b, "rev"))
    assert not np.array_equal(dense(a, "fwd"), dense(c, "fwd"))


def _null_mass(m):
    """Mean NULL probability of a target token (forward direction)."""
    return float(1 - dense(m).sum() / len(m.corpus.tgt))


def test_priors_move_the_result_in_the_expected_direction():
    pairs = _pairs(40)
    lo = BayesAligner(BayesConfig(**FAST, p_null=0.02)).align(pairs, seed=0)
    hi = BayesAligner(BayesConfig(**FAST, p_null=0.6)).align(pairs, seed=0)
    assert _null_mass(hi) > _null_mass(lo) + 0.05  # more NULL prior -> more NULL mass
    sparse = BayesAligner(BayesConfig(**FAST, lex_alpha=1e-4)).align(pairs, seed=0)
    flat = BayesAligner(BayesConfig(**FAST, lex_alpha=50.0)).align(pairs, seed=0)

    def peak(m):  # mean largest link marginal per target token: sparse priors are peakier
        return np.mean([cells(m, k).max(0).mean() for k in range(m.corpus.n_sentences)])

    assert peak(sparse) > peak(flat) + 0.05


def test_schedule_scales_with_corpus_size():
    cfg = BayesConfig()
    assert schedule(cfg, 248) == [79, 79, 318]  # eflomal's on 248 pairs
    assert schedule(cfg, 200_000) == [2, 2, 11]
    assert schedule(BayesConfig(model=2), 10_000) == [12, 50, 0]
    assert schedule(BayesConfig(model=1, iterations=[5, 6, 7]), 10) == [5, 0, 0]


def test_save_load_round_trip_and_priors_workflow(tmp_path):
    pairs = _pairs(60)
    model = BayesAligner(BayesConfig(**FAST))
    model.align(pairs, seed=0)
    folder = BayesianAlignment(model).save_to(tmp_path / "m", {"method": "viterbi"})
    found = export.load(folder)  # through the bayesian family's loader
    assert isinstance(found, BayesianAlignment) and found.decoding == {"method": "viterbi"}
    loaded = found.model
    assert isinstance(loaded, BayesAligner)
    a, _, _ = model.state()
    b, _, vocab = loaded.state()
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert vocab["src"] == model.src_ids.words
    # a folder saved while the batched sampler existed names it: those keys are ignored
    old = BayesAligner.from_state(b, {**model.state()[1], "sampler": "batched",
                                      "device": "cuda", "batch_cells": 4096}, vocab)
    assert old.config == loaded.config
    # new text (3 pairs, reordered, one unseen word): with the saved counts as priors the
    # links are right; without them 3 pairs cannot be learnt (the jump prior alone says
    # monotone)
    new = [(["s1", "s2", "s3"], ["t3", "t1", "t2"]), (["s4", "s5"], ["t5", "t4"]),
           (["s6", "snovel"], ["tnovel", "t6"])]
    gold = _gold(new)
    m = loaded.align(new, seed=0)
    assert _precision(_sets(m, direction="fwd"), gold) == 1.0
    assert "snovel" in loaded.src_ids.index
    cold = BayesAligner(BayesConfig(**FAST)).align(new, seed=0)
    assert _precision(_sets(cold, direction="fwd"), gold) < 0.8


def test_bad_input(tmp_path):
    with pytest.raises(AlignersInputError, match="empty"):
        BayesAligner(BayesConfig(**FAST)).align([], seed=0)
    with pytest.raises(AlignersInputError, match="empty side"):
        BayesAligner(BayesConfig(**FAST)).align([([], ["a"])], seed=0)
    for bad in (dict(p_null=1.0), dict(lex_alpha=0.0), dict(model=4), dict(n_samplers=0),
                dict(iterations=[1, 1])):
        with pytest.raises(ValueError):
            check(BayesConfig(**bad))
    with pytest.raises(AlignersInputError, match="no counts"):
        BayesAligner().state()
    (tmp_path / "x").mkdir()
    with pytest.raises(AlignersInputError):
        BayesianAlignment.from_folder(tmp_path / "x")
    model = BayesAligner(BayesConfig(**FAST))
    model.align(_pairs(10), seed=0)
    folder = BayesianAlignment(model).save_to(tmp_path / "m")
    (folder / "vocab.json").write_text(json.dumps({"src": ["a"], "tgt": ["b"]}))
    with pytest.raises(AlignersInputError, match="do not match"):
        BayesianAlignment.from_folder(folder)


def test_empty_lines_get_empty_alignments():
    pairs = [(["s1", "s2"], ["t1", "t2"]), ([], ["t1"]), (["s1"], []), (["s2"], ["t2"])]
    m = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=0)
    links = _sets(m, heuristic="grow-diag-final-and")
    assert links[1] == set() and links[2] == set() and len(links) == 4


def _corpus(tmp_path, n=60):
    src, tgt = toy_corpus(n, 0)
    s, t = tmp_path / "c.src", tmp_path / "c.tgt"
    s.write_text("".join(" ".join(x) + "\n" for x in src), encoding="utf-8")
    t.write_text("".join(" ".join(x) + "\n" for x in tgt), encoding="utf-8")
    return s, t


CLI_FAST = ["--model", "bayesian", "--length", "0.2", "--samplers", "2", "--quiet"]


def test_cli_align_save_load_posteriors(tmp_path):
    s, t = _corpus(tmp_path)
    out, f, r, model_dir = (tmp_path / n for n in ("out", "f", "r", "m"))
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(out), "-f", str(f), "-r",
                 str(r), "--save-model", str(model_dir), *CLI_FAST]) == 0
    for p in (out, f, r):
        assert len(p.read_text().splitlines()) == 60
    assert json.loads((model_dir / "config.json").read_text())["kind"] == "bayesian"
    new = tmp_path / "new.txt"
    new.write_text("s1 s2 s3 ||| t1 t2 t3\ns4 ||| t4\n", encoding="utf-8")
    out2 = tmp_path / "out2"
    # the saved kind picks the Bayesian route without --model
    assert main(["align", "-i", str(new), "-o", str(out2), "--load-model", str(model_dir),
                 "--posteriors", "--quiet"]) == 0
    lines = out2.read_text().splitlines()
    assert len(lines) == 2
    links = {tok.split(":")[0]: float(tok.split(":")[1]) for tok in lines[0].split()}
    assert set(links) == {"0-0", "1-1", "2-2"}
    assert all(0.5 < p <= 1.0 for p in links.values())


def test_cli_bad_input(tmp_path, capsys):
    s, t = _corpus(tmp_path, 10)
    assert main(["align", "-s", str(s), "-t", str(t), "--device", "cuda", *CLI_FAST]) == 2
    assert main(["align", "-s", str(s), "-t", str(t), "--decoding", "agreement",
                 *CLI_FAST]) == 2
    assert main(["align", "-s", str(s), "-t", str(t), "--null-prior", "1.5", *CLI_FAST]) == 2
    assert main(["align", "-s", str(s), "-t", str(t), "--symmetrize", "bogus",
                 *CLI_FAST]) == 2
    with pytest.raises(SystemExit):  # the batched sampler is gone: argparse refuses it
        main(["align", "-s", str(s), "-t", str(t), "--sampler", "batched", *CLI_FAST])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--device cuda" in err
    assert "--null-prior must be a number in [0, 1); got 1.5" in err
    assert "error: ambiguous option: --sampler could match" in err.splitlines()[-1]


def test_lazy_in_place_priors_equal_eager_copies(monkeypatch):
    """The memory-saving path (one (P,) lex array per direction, refilled in place each stage;
    float32 averaging; pair ids freed after sampling) gives the same marginals as eagerly
    materialised zero priors, and averaged lex counts equal to the float64 reference."""
    pairs = _pairs(40)
    lazy = BayesAligner(BayesConfig(**FAST))
    a = lazy.align(pairs, seed=5)
    assert len(a.corpus.pair_lo) == len(a.corpus.pair_hi) == 0  # released
    eager = BayesAligner(BayesConfig(**FAST))
    orig = BayesAligner._priors
    monkeypatch.setattr(BayesAligner, "_priors",
                        lambda self, c, d, lazy=False: orig(self, c, d, lazy=False))
    b = eager.align(pairs, seed=5)
    np.testing.assert_array_equal(dense(a, "fwd"), dense(b, "fwd"))
    np.testing.assert_array_equal(dense(a, "rev"), dense(b, "rev"))
    for d in ("fwd", "rev"):
        np.testing.assert_allclose(lazy.counts[d].lex, eager.counts[d].lex, rtol=1e-6)
        assert lazy.counts[d].lex.dtype == np.float32
        # counts are reset between stages and samplers: the mass is at most one per token
        n_obs = sum(len(t if d == "fwd" else s) for s, t in pairs)
        assert 0.5 * n_obs < lazy.counts[d].lex.sum() <= n_obs + 1e-3


def test_link_lines_symmetrize_the_directions_and_read_a_span():
    """link_lines (the one decoder over the sparse marginals): the symmetrized lines are the
    heuristic applied to the two directions' lines, posterior lines carry the same links,
    and a span's lines are those sentences' lines of the whole text."""
    from aligners.symmetrize import symmetrize_corpus

    pairs = _pairs(40)
    m = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=2)

    def fmt(links):
        return [" ".join(f"{i}-{j}" for i, j in sorted(ls)) for ls in links]

    def plain(lines):
        return [" ".join(x.split(":")[0] for x in ln.split()) for ln in lines]

    for th in (None, 0.3):
        f = _sets(m, direction="fwd", threshold=th)
        r = _sets(m, direction="rev", threshold=th)
        for h in ("intersect", "grow-diag-final-and"):
            sym = symmetrize_corpus(f, r, h)
            assert list(link_lines(m, heuristic=h, threshold=th)) == fmt(sym)
            post = list(link_lines(m, heuristic=h, threshold=th, posteriors=True))
            assert plain(post) == fmt(sym)
            assert all(0 < float(x.split(":")[1]) <= 1 for ln in post for x in ln.split())
            assert list(link_lines(m, heuristic=h, threshold=th, span=(5, 9))) == fmt(sym)[5:9]
        rev = list(link_lines(m, direction="rev", threshold=th, posteriors=True))
        assert plain(rev) == fmt(r)
        assert list(link_lines(m, direction="rev", threshold=th, posteriors=True,
                               span=(5, 9))) == rev[5:9]
    assert sum(len(ls) for ls in f) > 0


def test_pair_ids_by_frequency_and_keys_rebuilt():
    """Pair ids: one id per distinct (s, t), numbered by decreasing number of cells (ties in
    corpus order), split in 3 bytes; keys dropped for sampling are rebuilt identically from
    the ids."""
    from aligners.data.vocab import WordIds
    from aligners.models.bayesian.corpus import encode_bitext

    pairs = _pairs(30)
    c = encode_bitext(pairs, WordIds(), WordIds())
    pid = pair_ids(c)
    assert c.pair_lo.dtype == np.uint16 and c.pair_hi.dtype == np.uint8
    full = []
    for k in range(c.n_sentences):
        s = c.src[c.src_off[k]:c.src_off[k + 1]].astype(np.int64)
        t = c.tgt[c.tgt_off[k]:c.tgt_off[k + 1]].astype(np.int64)
        full.append((s[:, None] * c.n_tgt_words + t[None, :]).ravel())
    full = np.concatenate(full)
    np.testing.assert_array_equal(c.keys[pid], full)
    assert len(np.unique(c.keys)) == len(c.keys) == c.n_pairs
    uniq, first, inv = np.unique(full, return_index=True, return_inverse=True)
    order = np.lexsort((first, -np.bincount(inv)))  # most cells first, ties: corpus order
    np.testing.assert_array_equal(c.keys, uniq[order])
    n_cells = np.bincount(pid, minlength=c.n_pairs)
    assert n_cells[0] > 1 and np.all(np.diff(n_cells) <= 0)
    keys = c.keys.copy()
    c.keys = None
    c.restore_keys()
    np.testing.assert_array_equal(c.keys, keys)


def test_pair_table_in_chunks_equals_one_chunk(monkeypatch):
    """About 100k distinct pairs, their cells' ids found a few sentences at a time: every
    cell still maps to its own (s, t) key, one id per pair, the same ids as in one chunk."""
    from aligners.data.vocab import WordIds
    from aligners.models.bayesian import pair_table
    from aligners.models.bayesian.corpus import encode_bitext

    rng = np.random.default_rng(0)
    pairs = [([f"s{w}" for w in rng.integers(0, 5000, 20)],
              [f"t{w}" for w in rng.integers(0, 5000, 20)]) for _ in range(300)]
    one = encode_bitext(pairs, WordIds(), WordIds())
    monkeypatch.setattr(pair_table, "_CHUNK_CELLS", 1000)  # 2 or 3 sentences
    c = encode_bitext(pairs, WordIds(), WordIds())
    for f in ("pair_lo", "pair_hi", "keys"):
        np.testing.assert_array_equal(getattr(one, f), getattr(c, f))
    assert c.n_pairs > 90_000
    full = np.concatenate([
        (c.src[c.src_off[k]:c.src_off[k + 1]].astype(np.int64)[:, None] * c.n_tgt_words
         + c.tgt[c.tgt_off[k]:c.tgt_off[k + 1]][None, :]).ravel()
        for k in range(c.n_sentences)])
    np.testing.assert_array_equal(c.keys[pair_ids(c)], full)
    assert len(np.unique(c.keys)) == c.n_pairs


def test_marginal_slots_auto_and_explicit(monkeypatch):
    """0 = auto: 3 slots per token, 2 from the token threshold on; an explicit K is kept;
    a negative K is refused with a one-line ValueError."""
    import aligners.models.bayesian.model as M

    pairs = _pairs(20)
    assert BayesAligner(BayesConfig(**FAST)).align(pairs).fwd_slots.pos.shape[1] == 3
    assert BayesAligner(BayesConfig(**FAST, marginal_slots=5)).align(
        pairs).rev_slots.pos.shape[1] == 5
    monkeypatch.setattr(M, "_AUTO_SLOTS_TOKENS", 10)
    assert BayesAligner(BayesConfig(**FAST)).align(pairs).fwd_slots.pos.shape[1] == 2
    with pytest.raises(ValueError, match="marginal_slots"):
        check(BayesConfig(marginal_slots=-1))


def test_restore_keys_releasing_pairs_block_by_block():
    """Keys rebuilt in blocks of sentences while the pair ids' pages are dropped equal the
    keys of the encoder; the ids are released after; dropped pages read as zeros (Linux)."""
    import sys

    from aligners.data.vocab import WordIds
    from aligners.models.bayesian.corpus import _drop_pages, encode_bitext

    c = encode_bitext(_pairs(40), WordIds(), WordIds())
    keys = c.keys.copy()
    c.keys = None
    c.restore_keys()
    np.testing.assert_array_equal(c.keys, keys)
    assert len(c.pair_lo) == len(c.pair_hi) == 0
    big = np.ones(1 << 22, np.uint8)
    dropped = _drop_pages(big[1000:])
    if sys.platform.startswith("linux"):
        assert dropped and big[:1000].all() and not big[1 << 21]


@pytest.mark.parametrize("hi_bytes", [1, 2])
def test_folded_single_cell_ids_fit_three_bytes_and_keep_their_ids(hi_bytes):
    """fold_singles (1-byte high ids: in place; 2-byte, as from 2^24 pairs on: narrowed
    inside their buffer) leaves every shared pair's id, gives every single-cell pair's cell
    the id SINGLE in 1 high byte, and its own id stays known: single_pair_ids of random
    alignments of both directions and the keys rebuilt block by block equal the unfolded
    ones; per-cell int64 ids are refused once folded."""
    from aligners.data.vocab import WordIds
    from aligners.models.bayesian import counts as C
    from aligners.models.bayesian.corpus import SINGLE, encode_bitext

    pairs = _pairs(40) + [([f"q{k}", f"u{k}"], [f"r{k}", f"v{k}", "t1"]) for k in range(9)]
    c = encode_bitext(pairs, WordIds(), WordIds())
    c.pair_hi = c.pair_hi.astype(np.uint16 if hi_bytes == 2 else np.uint8)
    ids = c.pair_lo.astype(np.int64) | (c.pair_hi.astype(np.int64) << 16)
    keys, n_shared = c.keys.copy(), c.n_shared
    assert 0 < n_shared < c.n_pairs
    rng = np.random.default_rng(0)
    aligns = []
    for gen_off, obs_off, rev in ((c.src_off, c.tgt_off, False), (c.tgt_off, c.src_off, True)):
        n_gen = np.repeat(np.diff(gen_off), np.diff(obs_off))
        a = (rng.random(len(n_gen)) * (n_gen + 1)).astype(np.int16) - 1
        out = np.empty(len(a), np.int64)
        got = out[:C.single_pair_ids(gen_off, obs_off, c.cell_off, c.pair_lo, c.pair_hi, rev,
                                     a, n_shared, out, np.zeros(0, np.int64))].copy()
        assert len(got) > 5 and (got >= n_shared).all()
        aligns.append((gen_off, obs_off, rev, a, got))
    assert c.fold_singles() and c.fold_singles()  # (a second call: already folded)
    assert c.pair_hi.dtype == np.uint8 and len(c.pair_hi) == len(ids)
    folded = c.pair_lo.astype(np.int64) | (c.pair_hi.astype(np.int64) << 16)
    np.testing.assert_array_equal(folded, np.where(ids >= n_shared, SINGLE, ids))
    assert c.single_off[-1] == c.n_pairs - n_shared
    for gen_off, obs_off, rev, a, want in aligns:
        out = np.empty(len(a), np.int64)
        n = C.single_pair_ids(gen_off, obs_off, c.cell_off, c.pair_lo, c.pair_hi, rev, a,
                              n_shared, out, c.single_off)
        np.testing.assert_array_equal(out[:n], want)
    c.keys = None
    c.restore_keys()
    np.testing.assert_array_equal(c.keys, keys)


def test_single_cell_pairs_not_kept_while_sampling_same_result(monkeypatch):
    """Sampling with the single-cell pairs' counts left out (lex holds the n_shared shared
    ids) gives the same marginals and the same saved counts as keeping every pair's count
    (n_shared = -1, the path used with priors)."""
    import aligners.models.bayesian.model as M

    pairs = _pairs(40) + [([f"q{k}", f"u{k}"], [f"r{k}", f"v{k}"]) for k in range(6)]
    runs = []
    for keep_all in (False, True):
        encode = M.encode_bitext

        def enc(*a, _encode=encode, _keep=keep_all, **k):
            c = _encode(*a, **k)
            if _keep:
                c.n_shared = -1
            else:
                assert 0 < c.n_shared < c.n_pairs
            return c

        monkeypatch.setattr(M, "encode_bitext", enc)
        model = BayesAligner(BayesConfig(**FAST))
        m = model.align(pairs, seed=4)
        runs.append((m, model))
        monkeypatch.setattr(M, "encode_bitext", encode)
    (m1, a1), (m2, a2) = runs
    for d in ("fwd_slots", "rev_slots"):
        for f in ("pos", "mass", "null"):
            np.testing.assert_array_equal(getattr(getattr(m1, d), f), getattr(getattr(m2, d), f))
    np.testing.assert_array_equal(a1.keys, a2.keys)
    for d in ("fwd", "rev"):
        for f in ("lex", "null", "jump", "fert"):
            np.testing.assert_array_equal(getattr(a1.counts[d], f), getattr(a2.counts[d], f))
    assert a1.counts["fwd"].lex[m1.corpus.n_shared:].sum() > 0  # single-cell counts kept


@pytest.mark.parametrize("n", [1, 2, 3, 50])
def test_pair_table_on_two_threads_equals_one_pass(n):
    """The pair table built on two threads (word ranges, renumbering halves) equals the
    one-thread build: the same ids in every cell, the same keys and n_shared."""
    from aligners.data.vocab import WordIds
    from aligners.models.bayesian.corpus import encode_bitext

    pairs = _pairs(max(n, 2), seed=n)[:n] + [(["zz"], ["yy", "zz"])]
    one = encode_bitext(pairs, WordIds(), WordIds(), threads=1)
    two = encode_bitext(pairs, WordIds(), WordIds(), threads=2)
    for f in ("pair_lo", "pair_hi", "keys", "src", "tgt", "cell_off"):
        np.testing.assert_array_equal(getattr(one, f), getattr(two, f))
    assert (one.n_pairs, one.n_shared) == (two.n_pairs, two.n_shared)


def test_compile_child_warms_every_kernel_and_is_skipped_when_cached(monkeypatch):
    """warm_all compiles every kernel a run calls; a child starts only when the cache lacks
    them (and never inside the child itself), exits 0, and is waited for once."""
    from aligners.models.bayesian import jit
    from aligners.models.bayesian.model import exact_kernels, warm_all

    warm_all()
    kernels = exact_kernels()
    assert all(k.signatures for k in kernels)
    assert jit.wait_compile_child() is None  # none started
    monkeypatch.setattr(jit, "kernels_cached", lambda kernels: False)
    monkeypatch.setenv(jit._ENV, "1")
    assert jit.start_compile_child(kernels) is False  # the child does not start a grandchild
    monkeypatch.delenv(jit._ENV)
    assert jit.start_compile_child(kernels) is True
    assert jit.start_compile_child(kernels) is False  # one at a time
    assert jit.wait_compile_child() == 0
    assert jit.wait_compile_child() is None
    monkeypatch.undo()
    assert jit.kernels_cached((object(),)) is False  # numba internals moved


def test_mean_decoding_equals_the_dense_mean_of_the_directions():
    """The mean decoding (the default) keeps exactly the cells whose mean of the forward and
    reverse kept marginals exceeds the threshold (a dense oracle built from the slots), in
    (i, j) order; its posteriors are that mean; on the toy it is precise."""
    pairs = _pairs(40)
    m = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=3)
    c, fs, rs = m.corpus, m.fwd_slots, m.rev_slots
    for th in (0.25, 0.5, 0.55):
        want = []
        for k in range(c.n_sentences):
            s0, t0 = int(c.src_off[k]), int(c.tgt_off[k])
            n_i, n_j = int(c.src_off[k + 1]) - s0, int(c.tgt_off[k + 1]) - t0
            dense = np.zeros((n_i, n_j))
            for j in range(n_j):
                for g, p in zip(fs.pos[t0 + j], fs.mass[t0 + j], strict=True):
                    if g >= 0:
                        dense[g, j] += p
            for i in range(n_i):
                for g, p in zip(rs.pos[s0 + i], rs.mass[s0 + i], strict=True):
                    if g >= 0:
                        dense[i, g] += p
            want.append(sorted(map(tuple, np.argwhere(dense / 2 > th).tolist())))
        assert [sorted(ls) for ls in _sets(m, mean=th)] == want
        assert list(link_lines(m, mean=th, span=(3, 7))) == list(link_lines(m, mean=th))[3:7]
        lines = list(link_lines(m, mean=th, posteriors=True))
        assert [[tuple(map(int, x.split(":")[0].split("-"))) for x in ln.split()]
                for ln in lines] == want
        assert all(float(x.split(":")[1]) > th for ln in lines for x in ln.split())
    assert _precision(_sets(m, mean=0.55), _gold(pairs)) > 0.9


def test_default_decoding_is_the_mean_by_size_and_a_heuristic_still_symmetrizes(tmp_path):
    from aligners.models.aligned import RunOptions
    from aligners.models.bayesian.config import MEAN_THRESHOLDS, mean_threshold

    assert [mean_threshold(n) for n in (0, 4_999, 5_000, 10**6)] == [0.35, 0.35, 0.55, 0.55]
    assert MEAN_THRESHOLDS[0][0] == 0
    dec = BayesianAlignment.decoding_for(None)
    assert (dec.method, dec.threshold, dec.symmetrize) == ("mean", None, "none")
    assert BayesianAlignment.decoding_for(None, threshold=0.6).threshold == 0.6
    assert BayesianAlignment.decoding_for(None, method="posterior").threshold == 0.5
    model, aligned = BayesianAlignment.fit(_pairs(30), BayesConfig(**FAST), RunOptions(seed=1))
    by_size = list(aligned.lines(("sym",), dec)["sym"])
    explicit = BayesianAlignment.decoding_for(None, threshold=mean_threshold(30))
    assert by_size == list(aligned.lines(("sym",), explicit)["sym"])
    model.save(tmp_path / "m", dec)  # saved as the number used on its text
    assert BayesianAlignment.from_folder(tmp_path / "m").decoding["threshold"] == 0.35
    asked = BayesianAlignment.decoding_for(None, symmetrize="grow-diag-final-and")
    assert (asked.method, asked.symmetrize) == ("viterbi", "grow-diag-final-and")
    with pytest.raises(AlignersInputError):
        BayesianAlignment.decoding_for(None, method="viterbi", symmetrize="none")
