"""Options of the neural semi-CRF aligner added for issue 13's accuracy work (tiny random BERT,
no network): cross-sentence (pair) word vectors, explicit span cosines, the non-identical
recall cost. Each: gradients, batched == one-by-one, save/load, a direct re-computation."""

import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aligners.errors import AlignersInputError  # noqa: E402
from aligners.models.mono.aligner import MonoAligner, chunks, featurise  # noqa: E402
from tests.test_mono_neural import (  # noqa: E402
    assert_batched_equals_one_by_one,
    assert_central_differences,
    model,
    pairs,
    tiny_encoder,
)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_encoder(tmp_path_factory.mktemp("tiny_bert"))


OPTIONS = [("pair", False), ("both", True), ("separate", True)]


def test_pair_vectors_batched_equal_one_by_one_and_see_the_other_sentence(encoder_dir):
    from aligners.models.mono.neural import make_encoder, pair_vectors

    enc = make_encoder({"path": encoder_dir}, batch_size=3)
    ps = [(p.src, p.tgt) for p in pairs()]
    with torch.no_grad():
        together = pair_vectors(enc, ps)
        for (a, b), (s, t) in zip(together, ps):
            (a1, b1), = pair_vectors(enc, [(s, t)])
            assert a.shape == (len(s), enc.dim) and b.shape == (len(t), enc.dim)
            assert torch.allclose(a, a1, atol=1e-5) and torch.allclose(b, b1, atol=1e-5)
        # by hand: one [CLS] s [SEP] t [SEP] pass, mean over the pieces of word 0 of t
        s, t = ps[0]
        tok = enc.tokenizer(list(s), list(t), is_split_into_words=True, return_tensors="pt")
        hid = enc.model(**tok).last_hidden_state[0]
        cols = [n for n, (w, q) in enumerate(zip(tok.word_ids(0), tok.sequence_ids(0)))
                if w == 0 and q == 1]
        want = torch.nn.functional.normalize(hid[cols].mean(0), dim=-1)
        assert torch.allclose(together[0][1][0], want, atol=1e-5)
        # the source vectors depend on the target sentence (cross attention)
        (other, _), = pair_vectors(enc, [(s, ("the", "dog"))])
        assert not torch.allclose(other, together[0][0], atol=1e-4)
        alone = enc.vectors([s])[0]
        assert not torch.allclose(alone, together[0][0], atol=1e-4)


@pytest.mark.parametrize("context,cosine", OPTIONS)
def test_gradients_match_finite_differences(encoder_dir, context, cosine):
    m = model(encoder_dir, context=context, cosine=cosine).double()
    (batch,), _ = chunks(featurise(pairs()[:2], m), max_tgt_len=m.max_tgt_len, batch_size=2)
    m.zero_grad()
    m.loss(batch).backward()
    params = [(m.proj.weight, (1, 2)), (m.out.weight, (0, 3)), (m.w_ab.weight, (2, 1))]
    if cosine:
        params += [(m.w_cos.weight, (0, 0)), (m.w_cos.weight, (3, 1)),
                   (m.out_cos.weight, (0, 0)), (m.out_cos.weight, (0, 1))]
    assert_central_differences(m, batch, params)
    if cosine:
        assert float(m.w_cos.weight.grad.abs().sum()) > 0


def test_finetuned_pair_encoder_gets_gradients(encoder_dir):
    m = model(encoder_dir, finetune=True, context="pair", cosine=True)
    (batch,), _ = chunks(featurise(pairs(), m), max_tgt_len=m.max_tgt_len, batch_size=4)
    m.loss(batch).backward()
    enc = [p for n, p in m.named_parameters() if n.startswith("encoder_net.")]
    assert enc and any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in enc)


@pytest.mark.parametrize("context,cosine,finetune", [(*o, False) for o in OPTIONS]
                         + [("pair", True, True)])
def test_batched_equals_one_by_one_and_save_load(encoder_dir, tmp_path, context, cosine,
                                                   finetune):
    import aligners

    m = model(encoder_dir, context=context, cosine=cosine, finetune=finetune, seed=4)
    if cosine:  # random (not zero-start) cosine weights so that they matter
        with torch.no_grad():
            m.out_cos.weight.copy_(torch.tensor([[3.0, -2.0]]))
    al = MonoAligner({"s2t": m}, kind="neural")
    together = assert_batched_equals_one_by_one(al)
    back = aligners.load(al.save(tmp_path / "model"))
    got = back.models["s2t"]
    assert (got.context, got.cosine, got.finetune) == (context, cosine, finetune)
    assert back.align(pairs()) == together


def test_cosine_scorer_equals_the_direct_mlp(encoder_dir):
    """Scores with cosines == MLP([a, b, a*b, (a-b)^2, cos_raw, cos_proj]) + direct terms,
    span pair by span pair (context both: 2 D-d inputs)."""
    from aligners.models.mono.states import state_table

    m = model(encoder_dir, seed=5, context="both", cosine=True).double()
    with torch.no_grad():
        m.w_cos.weight.normal_()
        m.out_cos.weight.normal_()
    ex = featurise(pairs()[:1], m)
    (batch,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=1)
    pair, _ = m.span_scores(batch)
    e = ex[0]
    assert e.src_vec.shape[1] == 2 * m.dim
    Rs, Rt = e.src_vec.double(), e.tgt_vec.double()
    S, T = m.proj(Rs), m.proj(Rt)
    st = state_table(tgt_len=len(e.tgt), max_tgt_len=m.max_tgt_len)
    W1 = torch.cat([m.w_a.weight, m.w_b.weight, m.w_ab.weight, m.w_diff.weight,
                    m.w_cos.weight], 1)
    cos = torch.nn.functional.cosine_similarity
    checked = 0
    for n in range(len(e.src)):
        for k in range(1, m.max_src_len + 1):
            if n + k > len(e.src):
                continue
            am = S[n: n + k].mean(0)
            a = am + m.src_len.weight[k - 1]
            for c in range(1, st["start"].shape[0]):
                s0, ln = int(st["start"][c]), int(st["length"][c])
                if s0 < 0:
                    continue
                bm = T[s0: s0 + ln].mean(0)
                b = bm + m.tgt_len.weight[ln - 1]
                cs = torch.stack([cos(Rs[n: n + k].mean(0), Rt[s0: s0 + ln].mean(0), dim=0),
                                  cos(am, bm, dim=0)])
                h = torch.relu(W1 @ torch.cat([a, b, a * b, (a - b) ** 2, cs]) + m.w_a.bias)
                want = float(m.out(h)) + float(m.out_cos.weight[0] @ cs)
                assert math.isclose(float(pair[0, n, k - 1, c]), want, rel_tol=1e-9,
                                    abs_tol=1e-9)
                checked += 1
    assert checked > 10


def test_nonident_cost_equals_counting(encoder_dir):
    """collate's nonident_fn_cost: a segment [n, n+k) labelled c gains w per gold link
    (i, j), i in the segment, src[i] != tgt[j] case-folded, j outside c's target phrase;
    identical-word links and other segments cost nothing extra."""
    from aligners.data.types import AlignedPair, Alignment
    from aligners.models.mono.states import state_table

    m = model(encoder_dir)
    ps = pairs() + [AlignedPair(("The", "cat", "sat"), ("the", "cat", "was", "sitting"),
                                Alignment(frozenset({(0, 0), (1, 1), (2, 2), (2, 3), (1, 3)}),
                                          frozenset()))]
    ex = featurise(ps, m)
    (base,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=len(ex))
    (batch,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=len(ex), cost=(1, 1, 2.5))
    extra = batch.cost - base.cost
    nonzero = 0
    for b, e in enumerate(batch.examples):
        st = state_table(tgt_len=len(e.tgt), max_tgt_len=m.max_tgt_len)
        for n in range(len(e.src)):
            for k in range(1, m.max_src_len + 1):
                for c in range(st["start"].shape[0]):
                    s0, ln = int(st["start"][c]), int(st["length"][c])
                    inside = set(range(s0, s0 + ln)) if st["valid"][c] else set()
                    want = 0.0
                    if n + k <= len(e.src):
                        want = 2.5 * sum(1 for i in range(n, n + k) for j in range(len(e.tgt))
                                         if e.gold[i, j] and j not in inside
                                         and e.src[i].lower() != e.tgt[j].lower())
                    assert math.isclose(float(extra[b, n, k - 1, c]), want, abs_tol=1e-5)
                    nonzero += want > 0
    assert nonzero > 0
    (plain,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=len(ex), cost=(1, 1, 0.0))
    assert torch.equal(plain.cost, base.cost)


def test_bad_options(encoder_dir, tmp_path):
    from omegaconf import open_dict

    from aligners.run import train
    from tests.test_mono_training import _cfg

    with pytest.raises(AlignersInputError, match="model.context"):
        model(encoder_dir, context="joint")
    cfg = _cfg("train", ["experiment=neural_msr06", "training.nonident_fn_cost=-1"], tmp_path)
    with open_dict(cfg):
        cfg.model.encoder = {"path": encoder_dir}
    with pytest.raises(AlignersInputError, match="nonident_fn_cost"):
        train(cfg)


def test_train_with_options(encoder_dir, tmp_path, capsys):
    """A tiny `neural_msr06` run with pair vectors, cosines and the non-identical cost: the
    per-epoch non-identical selection F1 is recorded, the saved model re-scores the same."""
    from omegaconf import open_dict

    from aligners.run import evaluate, train
    from tests.conftest import shared_path
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    small = ["experiment=neural_msr06", "data.train_limit=6", "data.test_limit=3",
             "training.select=2", "training.epochs=2", "model.proj=8", "model.hidden=8",
             "model.context=pair", "model.cosine=true", "training.nonident_fn_cost=2"]
    cfg = _cfg("train", small, tmp_path)
    with open_dict(cfg):
        cfg.model.encoder = {"path": encoder_dir}
    metrics = train(cfg)
    assert "non-identical" in capsys.readouterr().out
    assert "s2t/select_nonident_f1_epoch1" in metrics["train"]
    ecfg = _cfg("evaluate", ["experiment=neural_msr06", "data.test_limit=3",
                             f"ckpt_path={tmp_path / 'model'}"], tmp_path / "eval")
    assert evaluate(ecfg)["test/s2t"] == metrics["test/s2t"]
