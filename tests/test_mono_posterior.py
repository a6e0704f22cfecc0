"""Posterior (MBR) decoding of the monolingual CRFs: link posteriors against brute-force
enumeration of every labelled segmentation, batched == one-by-one, the token CRF's posteriors
against the linear-chain gradient, peaked weights give the Viterbi links, thresholds, the
t2s orientation, bad decode options and the monoalign CLI flags."""

import itertools
import math

import pytest
import torch

from aligners.data.types import AlignedPair
from aligners.errors import AlignersInputError
from aligners.lattices import linear_chain
from aligners.models.mono.aligner import MonoAligner, check_decode
from aligners.models.mono.crf import TokenCRFAligner
from aligners.models.mono.potentials import collate, prepare
from aligners.models.mono.semicrf import PhraseCRFAligner, link_matrix
from aligners.models.mono.states import state_phrase
from tests.test_mono_model import _enumerate, log_potentials

PAIRS = [
    ("he passed away today".split(), "he died today".split()),
    ("the cat sat".split(), "a cat was sitting".split()),
    ("New York".split(), "New York City is".split()),
    ("big".split(), "the big home".split()),
]


def _model(cls, Ls, Lt, seed=0, scale=0.7):
    torch.manual_seed(seed)
    m = cls() if cls is TokenCRFAligner else cls(max_src_len=Ls, max_tgt_len=Lt)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, scale)
    return m


def _batch(Ls, Lt, pairs=PAIRS):
    return collate([prepare(s, t, None, max_src_len=Ls, max_tgt_len=Lt) for s, t in pairs],
                   max_tgt_len=Lt, with_gold=False)


def _brute_link_posteriors(m, batch, b):
    """P(i ~ j) by enumerating every valid labelled segmentation of pair b (float64)."""
    lp = log_potentials(m, batch)[b].detach().double()
    ex = batch.examples[b]
    I, J, Ls, Lt = len(ex.src), len(ex.tgt), m.max_src_len, m.max_tgt_len
    C = 1 + J * Lt
    valid = batch.valid[b]
    scores, links = [], []
    for segs in _enumerate(I, C, Ls):
        if not all(valid[s, k - 1, c] for s, k, c in segs):
            continue
        prev = [0] + [c for _, _, c in segs[:-1]]
        scores.append(sum(float(lp[s, k, c, p]) for (s, k, c), p in zip(segs, prev)))
        al = set()
        for s, k, c in segs:
            end, lt = state_phrase(c, tgt_len=J, max_tgt_len=Lt)
            al |= {(i, j) for i in range(s, s + k) for j in range(end - lt, end)}
        links.append(al)
    top = max(scores)
    z = top + math.log(sum(math.exp(x - top) for x in scores))
    out = torch.zeros(I, J, dtype=torch.float64)
    for sc, al in zip(scores, links):
        for i, j in al:
            out[i, j] += math.exp(sc - z)
    return out


@pytest.mark.parametrize("cls,Ls,Lt", [(PhraseCRFAligner, 2, 2), (PhraseCRFAligner, 3, 2),
                                       (PhraseCRFAligner, 2, 3), (TokenCRFAligner, 1, 1)])
def test_link_posteriors_equal_brute_force(cls, Ls, Lt):
    m = _model(cls, Ls, Lt, seed=Ls * 10 + Lt).double()  # brute force in float64 too
    batch = _batch(Ls, Lt)
    post = m.link_posteriors(batch)
    for b, ex in enumerate(batch.examples):
        assert post[b].shape == (len(ex.src), len(ex.tgt)) and post[b].dtype == torch.float64
        want = _brute_link_posteriors(m, batch, b)
        assert torch.allclose(post[b], want, atol=1e-9, rtol=0), (b, post[b], want)
        assert float(post[b].min()) >= -1e-12 and float(post[b].max()) <= 1 + 1e-9


def test_segment_marginals_sum_to_one_per_source_word():
    m, batch = _model(PhraseCRFAligner, 3, 3, seed=4), _batch(3, 3)
    mu = m.segment_marginals(batch)
    for b, ex in enumerate(batch.examples):
        cover = torch.zeros(len(ex.src), dtype=torch.float64)
        for n, k in itertools.product(range(len(ex.src)), range(1, 4)):
            cover[n: n + k] += mu[b, n, k].sum()
        assert torch.allclose(cover, torch.ones_like(cover), atol=1e-9, rtol=0)


def test_token_crf_posteriors_equal_the_linear_chain_gradient():
    m, batch = _model(TokenCRFAligner, 1, 1, seed=2).double(), _batch(1, 1)
    emit, trans, start = (x.detach().double() for x in m.factors(batch))
    emit.requires_grad_()
    z = linear_chain.log_partition(m.chain_potentials((emit, trans, start)),
                                   lengths=batch.lengths)
    (g,) = torch.autograd.grad(z.sum(), emit)
    post = m.link_posteriors(batch)
    for b, ex in enumerate(batch.examples):
        J = len(ex.tgt)
        want = g[b, : len(ex.src), 1, 1: J + 1]  # token states 1..J = target words 0..J-1
        assert torch.allclose(post[b], want, atol=1e-10, rtol=0)


@pytest.mark.parametrize("cls,Ls,Lt", [(PhraseCRFAligner, 3, 3), (TokenCRFAligner, 1, 1)])
def test_batched_equals_one_by_one(cls, Ls, Lt):
    m = _model(cls, Ls, Lt, seed=7).double()
    post = m.link_posteriors(_batch(Ls, Lt))
    dec = m.decode_posterior(_batch(Ls, Lt), threshold=0.3)
    for b, pair in enumerate(PAIRS):
        one = _batch(Ls, Lt, [pair])
        assert torch.allclose(post[b], m.link_posteriors(one)[0], atol=1e-10, rtol=0)
        blocks, links, score = m.decode_posterior(one, threshold=0.3)[0]
        assert dec[b][:2] == (blocks, links) and dec[b][2] == pytest.approx(score, abs=1e-12)


def test_threshold_keeps_the_links_above_it_and_peaked_weights_give_viterbi():
    m, batch = _model(PhraseCRFAligner, 3, 3, seed=1), _batch(3, 3)
    post = m.link_posteriors(batch)
    for t in (0.0, 0.2, 0.5, 0.9):
        for (blocks, links, score), p in zip(m.decode_posterior(batch, threshold=t), post):
            assert links == sorted(map(tuple, (p > t).nonzero().tolist()))
            assert score == pytest.approx(float(p[p > t].sum()) / p.shape[0])
            block_links = {(i, j) for s, k, u, lt in blocks
                           for i in range(s, s + k) for j in range(u, u + lt)}
            assert block_links <= set(links)  # a span pair's marginal <= its links' posteriors
    sharp = _model(PhraseCRFAligner, 3, 3, seed=1)
    with torch.no_grad():
        for p in sharp.parameters():
            p.mul_(60.0)  # one path holds ~all the mass
    vit = sharp.decode(batch)
    for (vb, vl, _), (pb, pl, _) in zip(vit, sharp.decode_posterior(batch, threshold=0.5)):
        assert vl == pl and vb == pb


def test_aligner_posterior_decoding_and_t2s_orientation():
    m = _model(PhraseCRFAligner, 2, 2, seed=5)
    r = _model(PhraseCRFAligner, 2, 2, seed=6)
    al = MonoAligner({"s2t": m, "t2s": r}, kind="phrase")
    pairs = [AlignedPair(tuple(s), tuple(t)) for s, t in PAIRS]
    for d in ("s2t", "t2s"):
        post = al.posteriors(pairs, direction=d, batch_size=2)
        out = al.align(pairs, direction=d, batch_size=3, decode="posterior", threshold=0.4)
        for p, pair, (_, links, _) in zip(post, pairs, out):
            assert p.shape == (len(pair.src), len(pair.tgt))
            assert links == sorted(map(tuple, (p > 0.4).nonzero().tolist()))
    assert all(torch.allclose(a, b, atol=1e-6, rtol=0) for a, b in
               zip(al.posteriors(pairs, direction="s2t", batch_size=1),
                   al.posteriors(pairs, direction="s2t")))
    # default decoding is unchanged (Viterbi)
    assert al.align(pairs) == al.align(pairs, decode="viterbi")


@pytest.mark.parametrize("decode,threshold", [("mbr", 0.5), ("posterior", 1.0),
                                              ("posterior", -0.1), ("posterior", "x"),
                                              ("posterior", float("nan"))])
def test_bad_decode_options_raise_input_error(decode, threshold):
    with pytest.raises(AlignersInputError, match="decode must be|threshold must be"):
        check_decode(decode, threshold)
    al = MonoAligner({"s2t": _model(PhraseCRFAligner, 2, 2)}, kind="phrase")
    with pytest.raises(AlignersInputError):
        al.align([PAIRS[0]], decode=decode, threshold=threshold)


def test_link_matrix_covers_each_state_phrase():
    M = link_matrix(tgt_len=3, max_tgt_len=2)
    assert M.shape == (7, 3) and not M[0].any()
    for c in range(1, 7):
        end, lt = state_phrase(c, tgt_len=3, max_tgt_len=2)
        assert M[c].nonzero().flatten().tolist() == (list(range(end - lt, end))
                                                     if end - lt >= 0 else [])


def test_cli_monoalign_posterior(tmp_path, capsys):
    from tests.conftest import monoalign_lines

    m = _model(PhraseCRFAligner, 2, 2, seed=3)
    folder = MonoAligner({"s2t": m}, kind="phrase").save(tmp_path / "model")
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("he passed away today ||| he died today\nthe cat sat ||| a cat was sitting\n",
                     encoding="utf-8")

    def run(*extra):
        return monoalign_lines(capsys, folder, pairs, *extra)

    al = MonoAligner({"s2t": m}, kind="phrase")
    ps = [(s.split(), t.split()) for s, t in (("he passed away today", "he died today"),
                                                ("the cat sat", "a cat was sitting"))]
    want = [" ".join(f"{i}-{j}" for i, j in links)
            for _, links, _ in al.align(ps, decode="posterior", threshold=0.25)]
    assert run("--decode", "posterior", "--threshold", "0.25") == want
    assert run() == [" ".join(f"{i}-{j}" for i, j in links) for _, links, _ in al.align(ps)]
    with pytest.raises(AlignersInputError, match="threshold"):
        run("--decode", "posterior", "--threshold", "1.5")


def test_evaluate_run_with_posterior_decoding(tmp_path, capsys):
    """`evaluate.py ... model.decode=posterior model.threshold=T` writes the posterior links;
    a bad decode option is rejected before training."""
    from aligners import load
    from aligners.run import evaluate, train
    from aligners.training.mono import _eval_splits
    from tests.conftest import shared_path
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    small = ["experiment=tokencrf_msr06", "data.train_limit=12", "data.test_limit=6",
             "training.max_iter=3"]
    with pytest.raises(AlignersInputError, match="decode must be"):
        train(_cfg("train", [*small, "model.decode=mbr"], tmp_path / "bad"))
    assert not (tmp_path / "bad" / "model").exists()
    train(_cfg("train", small, tmp_path))
    cfg = _cfg("evaluate", [*small, f"ckpt_path={tmp_path / 'model'}", "model.decode=posterior",
                            "model.threshold=0.2"], tmp_path / "eval")
    metrics = evaluate(cfg)
    capsys.readouterr()
    pairs = _eval_splits(cfg)["test"]
    want = load(tmp_path / "model").align(pairs, decode="posterior", threshold=0.2)
    got = (tmp_path / "eval" / "predictions.test.s2t.pharaoh").read_text().splitlines()
    assert got == [" ".join(f"{i}-{j}" for i, j in links) for _, links, _ in want]
    assert metrics["test/s2t"]["pairs"] == 6
