"""Token and phrasal CRF aligners: factored DP vs the generic lattices, softmax-margin vs
brute-force enumeration, decoding on fixtures, safetensors round trip."""

import itertools
import json
import math

import pytest
import torch

from aligners.lattices import semimarkov
from aligners.models.mono.crf import TokenCRFAligner
from aligners.models.mono.potentials import collate, prepare
from aligners.models.mono.semicrf import PhraseCRFAligner, segments_to_output
from aligners.models.mono.states import state_phrase
from aligners.semirings import semiring_zero

PAIRS = [
    ("the cat sat on the mat".split(), "a cat is sitting on a mat".split(),
     [(1, 1), (2, 3), (3, 4), (5, 6)]),
    ("he passed away".split(), "he died".split(), [(0, 0), (1, 1), (2, 1)]),
    ("New York is big".split(), "New York City is large".split(),
     [(0, 0), (1, 1), (0, 1), (1, 0), (2, 3), (3, 4)]),
]


def log_potentials(m, batch, **kw):
    """(B, I, Ls+1, C, C) torch-struct semi-Markov log-potentials [b, n, k, c, c'] of the
    model's factored potentials (position 0: the START label, which must be NULL)."""
    emit, trans, start = m.factors(batch, **kw)
    if not torch.is_tensor(trans):  # a JumpTransition
        trans = trans.dense()
    lp = emit.unsqueeze(-1) + trans[:, None, None]
    lp0 = torch.full_like(lp[:, 0], semiring_zero(lp.dtype))
    lp0[..., 0] = emit[:, 0] + start[:, None, :]
    return torch.cat([lp0.unsqueeze(1), lp[:, 1:]], dim=1)


def _model(cls, Ls, Lt, seed=0):
    torch.manual_seed(seed)
    m = cls() if cls is TokenCRFAligner else cls(max_src_len=Ls, max_tgt_len=Lt)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    return m


def _batch(Ls, Lt, pairs=PAIRS):
    exs = [prepare(s, t, g, max_src_len=Ls, max_tgt_len=Lt) for s, t, g in pairs]
    return collate(exs, max_tgt_len=Lt)


@pytest.mark.parametrize("Ls,Lt", [(1, 1), (2, 2), (3, 3), (3, 1)])
def test_factored_dp_equals_generic_semimarkov_lattice(Ls, Lt):
    m, b = _model(PhraseCRFAligner, Ls, Lt), _batch(Ls, Lt)
    for kw in ({}, {"cost_weight": 1.0}, {"gold_only": True}):
        f = m.factors(b, **kw)
        lp = log_potentials(m, b, **kw)
        ours = m.log_partition(f, b.lengths)
        ref = semimarkov.log_partition(lp, lengths=b.lengths)
        assert torch.allclose(ours, ref, atol=1e-3), (kw, ours, ref)
    score, paths = m.viterbi(m.factors(b), b.lengths)
    ref_score, _ = semimarkov.viterbi(log_potentials(m, b), lengths=b.lengths)
    assert torch.allclose(score, ref_score, atol=1e-3)
    lp = log_potentials(m, b).detach()
    for n, segs in enumerate(paths):  # the path's own score is the Viterbi score
        total = sum(float(lp[n, s, k, c, prev]) for (s, k, c), prev in
                    zip(segs, [0] + [c for _, _, c in segs[:-1]]))
        assert total == pytest.approx(float(score[n]), abs=1e-3)
        assert sum(k for _, k, _ in segs) == len(b.examples[n].src)


def test_token_crf_on_linear_chain_equals_phrase_model_with_unit_lengths():
    tok, b = _model(TokenCRFAligner, 1, 1), _batch(1, 1)
    ph = PhraseCRFAligner(max_src_len=1, max_tgt_len=1)
    ph.load_state_dict(tok.state_dict())
    for w in (0.0, 1.0):
        assert torch.allclose(tok.loss(b, cost_weight=w), ph.loss(b, cost_weight=w), atol=1e-3)
    assert [o[1] for o in tok.decode(b)] == [o[1] for o in ph.decode(b)]


def _enumerate(I, C, Ls):
    """All (segments) paths: lists of (start, length, state) tiling 0..I-1."""
    def rec(t):
        if t == I:
            yield []
            return
        for k in range(1, min(Ls, I - t) + 1):
            for c in range(C):
                for rest in rec(t + k):
                    yield [(t, k, c), *rest]
    yield from rec(0)


@pytest.mark.parametrize("cls,Ls,Lt", [(PhraseCRFAligner, 2, 2), (TokenCRFAligner, 1, 1)])
def test_softmax_margin_vs_brute_force(cls, Ls, Lt):
    """loss(cost 0) = -log p(gold set) (log-loss); loss(cost w) = log sum exp(score + w*Hamming)
    - log sum_gold exp(score), the Hamming cost counting wrong links per source token."""
    src, tgt, gold = "he passed away today".split(), "he died today".split(), \
        [(0, 0), (1, 1), (2, 1), (3, 2)]
    m = _model(cls, Ls, Lt, seed=3)
    b = _batch(Ls, Lt, [(src, tgt, gold)])
    lp = log_potentials(m, b)[0].detach()
    valid = b.valid[0]
    J, C = len(tgt), lp.shape[-1]
    G = [{j for i2, j in gold if i2 == i} for i in range(len(src))]
    scores, costs, ok = [], [], []
    for segs in _enumerate(len(src), C, Ls):
        if not all(valid[s, k - 1, c] for s, k, c in segs):
            continue
        prev = [0] + [c for _, _, c in segs[:-1]]
        scores.append(sum(float(lp[s, k, c, p]) for (s, k, c), p in zip(segs, prev)))
        cost, good = 0, True
        for s, k, c in segs:
            end, lt = state_phrase(c, tgt_len=J, max_tgt_len=Lt)
            span = set(range(end - lt, end))
            for i in range(s, s + k):
                cost += len(span ^ G[i])
                good &= span == G[i] if len(G[i]) <= Lt else span <= G[i] and bool(span)
        costs.append(cost)
        ok.append(good)
    # subtract each token's cheapest cost so that gold paths cost 0
    best = [min(len(set(range(e - lt, e)) ^ G[i]) for c in range(C)
                for e, lt in [state_phrase(c, tgt_len=J, max_tgt_len=Lt)]
                if lt == 0 or e - lt >= 0) for i in range(len(src))]
    costs = [c - sum(best) for c in costs]

    def lse(xs):
        top = max(xs)
        return top + math.log(sum(math.exp(x - top) for x in xs))
    gold_z = lse([s for s, g in zip(scores, ok) if g])
    assert m.loss(b, cost_weight=0.0).item() == pytest.approx(lse(scores) - gold_z, abs=1e-3)
    aug = lse([s + 0.7 * c for s, c in zip(scores, costs)])
    assert m.loss(b, cost_weight=0.7).item() == pytest.approx(aug - gold_z, abs=1e-3)
    assert min(c for c, g in zip(costs, ok) if g) == 0


def test_training_recovers_fixture_alignments():
    """A few L-BFGS steps on identical/paraphrase fixtures; decoding recovers the gold."""
    train = [(s, t, g) for s, t, g in PAIRS] + [
        ("the dog ran home".split(), "the dog ran home".split(), [(i, i) for i in range(4)]),
        ("John bought a car".split(), "John purchased an automobile".split(),
         [(0, 0), (1, 1), (2, 2), (3, 3)]),
    ]
    for cls, Ls, Lt in [(TokenCRFAligner, 1, 1), (PhraseCRFAligner, 2, 2)]:
        m = cls() if cls is TokenCRFAligner else cls(max_src_len=Ls, max_tgt_len=Lt)
        b = _batch(Ls, Lt, train)
        opt = torch.optim.LBFGS(m.parameters(), max_iter=40, line_search_fn="strong_wolfe")

        def closure(m=m, b=b, opt=opt):
            opt.zero_grad()
            loss = m.loss(b) + 0.05 * m.l2()
            loss.backward()
            return loss
        opt.step(closure)
        test = _batch(Ls, Lt, [("the cat ran home".split(), "the cat ran home".split(),
                                [(i, i) for i in range(4)])])
        blocks, links, _ = m.decode(test)[0]
        assert links == [(i, i) for i in range(4)], (cls, links)


def test_segments_to_output_blocks_and_links():
    # J = 5, Lt = 2: state 10 = phrase ending at 5 of length 2 (tokens 3, 4)
    segs = [(0, 1, 0), (1, 2, 10), (3, 1, 1)]
    blocks, links = segments_to_output(segs, tgt_len=5, max_tgt_len=2)
    assert blocks == [(1, 2, 3, 2), (3, 1, 0, 1)]
    assert links == [(1, 3), (1, 4), (2, 3), (2, 4), (3, 0)]


@pytest.mark.parametrize("kind", ["phrase", "token"])
def test_model_folder_round_trip_both_directions(tmp_path, kind):
    """One folder holds both directions; `aligners.load` gives the same weights, kind and
    decoding; a t2s model's links and blocks come back in source-target order."""
    import aligners
    from aligners.models.mono.aligner import MonoAligner
    cls = PhraseCRFAligner if kind == "phrase" else TokenCRFAligner
    models = {"s2t": _model(cls, 2, 3, seed=1), "t2s": _model(cls, 2, 3, seed=2)}
    folder = MonoAligner(models, kind=kind).save(tmp_path / "model", config={"note": "x"})
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["kind"] == f"mono-{kind}-crf" and cfg["directions"] == ["s2t", "t2s"]
    again = aligners.load(folder)
    assert isinstance(again, MonoAligner) and again.kind == kind and again.meta["note"] == "x"
    for d in ("s2t", "t2s"):
        m, m2 = models[d], again.models[d]
        assert (m2.max_src_len, m2.max_tgt_len) == (m.max_src_len, m.max_tgt_len)
        for (na, a), (nb, b) in zip(m.state_dict().items(), m2.state_dict().items()):
            assert na == nb and torch.equal(a, b)
    pairs = [(s, t) for s, t, _ in PAIRS]
    s2t, t2s = again.align(pairs, direction="s2t"), again.align(pairs, direction="t2s")
    assert s2t == MonoAligner(models, kind=kind).align(pairs)
    # t2s output = the t2s model run on swapped pairs, flipped back by hand
    swapped = MonoAligner({"s2t": models["t2s"]}, kind=kind).align([(t, s) for s, t in pairs])
    for (b, links, sc), (b_sw, links_sw, sc_sw) in zip(t2s, swapped):
        assert links == sorted((j, i) for i, j in links_sw) and sc == sc_sw
        assert b == sorted((t, lt, s, k) for s, k, t, lt in b_sw)
    for (b, links, _), (src, tgt) in zip(t2s, pairs):  # blocks now index src first
        covered = set()
        for s, k, t, lt in b:
            assert s + k <= len(src) and t + lt <= len(tgt)
            covered |= {(i, j) for i in range(s, s + k) for j in range(t, t + lt)}
        assert covered == set(links)
    assert not list(itertools.chain(tmp_path.rglob("*.pt"), tmp_path.rglob("*.ckpt")))


@pytest.mark.parametrize("Ls,Lt", [(1, 1), (3, 3), (2, 3)])
def test_jump_transition_path_equals_dense_path(monkeypatch, Ls, Lt):
    """The bucketed transition (`JumpTransition`, forced on with JUMP_MIN_STATES = 0) gives
    the dense path's loss, gradients (float64, 1e-10) and Viterbi output; its dense form is
    w_trans[trans_idx] on every row's real states."""
    import aligners.models.mono.semicrf as semicrf

    m = _model(PhraseCRFAligner, Ls, Lt, seed=3).double()
    b = _batch(Ls, Lt)
    res = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(semicrf, "JUMP_MIN_STATES", threshold)
        m.zero_grad()
        loss = m.loss(b, cost_weight=1.0)
        loss.backward()
        res.append((loss.detach(), [p.grad.clone() for p in m.parameters()], m.decode(b),
                    m.factors(b)[1]))
    assert torch.is_tensor(res[0][3]) and not torch.is_tensor(res[1][3])
    assert torch.allclose(res[0][0], res[1][0], atol=1e-10, rtol=0)
    for g0, g1 in zip(res[0][1], res[1][1]):
        assert torch.allclose(g0, g1, atol=1e-10, rtol=0)
    assert res[0][2] == res[1][2]
    dense = res[1][3].dense()
    for n, ex in enumerate(b.examples):
        C = ex.emit.shape[2]
        assert torch.equal(dense[n, :C, :C], res[0][3][n, :C, :C])
