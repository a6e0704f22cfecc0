"""Decoding paths of the neural aligner added for issue 13's speed work (tiny random BERT, no
network): a fine-tuned encoder's vectors computed once in `featurise(decoding=True)` (the
second thread) give the same output as computing them in the scorer; passes with gradients
still re-run the encoder; the encoder inference precision (fp32 | bf16 | int8) option."""

import math

import pytest
import torch

pytest.importorskip("transformers")

from test_mono_neural import (  # noqa: E402,F401 (fixture)
    assert_batched_equals_one_by_one,
    encoder_dir,
    model,
    pairs,
)

from aligners.errors import AlignersInputError  # noqa: E402
from aligners.models.mono.aligner import (  # noqa: E402
    MonoAligner,
    chunks,
    featurise,
    predict,
    set_encoder_precision,
)


@pytest.mark.parametrize("context", ["pair", "separate", "both"])
def test_finetuned_decode_vectors_equal_the_forward_pass(encoder_dir, context):  # noqa: F811
    m = model(encoder_dir, finetune=True, context=context, seed=4)
    m.eval()
    lazy = featurise(pairs(), m)  # old path: the scorer runs the encoder per decode batch
    eager = featurise(pairs(), m, decoding=True)
    assert all(e.src_vec is None for e in lazy)
    assert all(e.src_vec is not None and not e.src_vec.requires_grad for e in eager)
    want_src, want_tgt = m._encode(lazy, frozen=False)
    for e, a, b in zip(eager, want_src, want_tgt):
        assert torch.allclose(e.src_vec, a.detach(), atol=1e-6)
        assert torch.allclose(e.tgt_vec, b.detach(), atol=1e-6)
    old = predict(m, lazy, batch_size=3)
    new = predict(m, eager, batch_size=3)
    for (b1, l1, s1), (b2, l2, s2) in zip(old, new):
        assert (b1, l1) == (b2, l2) and math.isclose(s1, s2, rel_tol=1e-5, abs_tol=1e-5)
    al = MonoAligner({"s2t": m}, kind="neural")
    assert [o[:2] for o in al.align(pairs(), batch_size=3)] == [o[:2] for o in old]


def test_decode_vectors_have_no_dropout_in_train_mode(encoder_dir):  # noqa: F811
    """A fine-tuned model left in train mode (dropout on) still gets eval-mode decode vectors,
    and its mode is restored."""
    m = model(encoder_dir, finetune=True, context="pair")
    m.encoder_net.config.hidden_dropout_prob = 0.5
    m.train()
    first = featurise(pairs(), m, decoding=True)
    second = featurise(pairs(), m, decoding=True)
    assert m.encoder_net.training
    m.eval()
    ref = featurise(pairs(), m, decoding=True)
    for a, b, c in zip(first, second, ref):
        assert torch.equal(a.src_vec, b.src_vec) and torch.equal(a.src_vec, c.src_vec)


def test_finetuned_training_pass_ignores_stored_vectors(encoder_dir):  # noqa: F811
    """With gradients enabled a fine-tuned model re-runs its encoder even when the examples
    carry decode vectors (else the encoder would get no gradient)."""
    m = model(encoder_dir, finetune=True, context="pair")
    ex = featurise(pairs(), m, decoding=True)
    with torch.no_grad():  # make the stored vectors wrong: the loss must not see them
        for e in ex:
            e.src_vec.mul_(0.0)
    (batch,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=4)
    m.loss(batch).backward()
    enc = [p for n, p in m.named_parameters() if n.startswith("encoder_net.")]
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in enc)
    # and without gradients the stored (zeroed) vectors are the ones used
    with torch.no_grad():
        zero = m.span_scores(batch)[0]
        (fresh,), _ = chunks(featurise(pairs(), m, decoding=True), max_tgt_len=m.max_tgt_len,
                             batch_size=4)
        assert not torch.allclose(zero, m.span_scores(fresh)[0])


@pytest.mark.parametrize("finetune", [False, True])
def test_precisions_are_close_to_fp32_and_switch_back(encoder_dir, finetune):  # noqa: F811
    m = model(encoder_dir, finetune=finetune, context="pair")
    m.eval()
    enc = m.encoder
    ps = [(p.src, p.tgt) for p in pairs()]
    from aligners.models.mono.neural import pair_vectors

    with torch.no_grad():
        ref = pair_vectors(enc, ps)
        for precision in ("bf16", "int8"):
            enc.set_precision(precision)
            got = pair_vectors(enc, ps)
            diff = max(float((a - a0).abs().max()) for (a, _), (a0, _) in zip(got, ref))
            assert 0 < diff < 0.2, (precision, diff)  # another computation, close values
            assert all(a.dtype == torch.float32 for a, _ in got)
        enc.set_precision("fp32")
        back = pair_vectors(enc, ps)
    assert all(torch.equal(a, a0) and torch.equal(b, b0) for (a, b), (a0, b0) in zip(back, ref))
    enc.set_precision("bf16")  # passes with gradients always run the fp32 weights
    with torch.enable_grad():
        grad_path = enc.vectors([ps[0][0]])[0]
    enc.set_precision("fp32")
    with torch.no_grad():
        assert torch.allclose(grad_path.detach(), enc.vectors([ps[0][0]])[0], atol=1e-6)


def test_frozen_memo_follows_the_precision(encoder_dir):  # noqa: F811
    m = model(encoder_dir, context="pair")
    al = MonoAligner({"s2t": m}, kind="neural")
    fp32 = featurise(pairs(), m)
    al.align(pairs(), encoder_precision="bf16")
    assert m.encoder.precision == "bf16"
    bf16 = featurise(pairs(), m)
    assert not torch.equal(bf16[0].src_vec, fp32[0].src_vec)  # not served from the fp32 memo
    set_encoder_precision(m, "fp32")
    again = featurise(pairs(), m)
    assert all(torch.equal(a.src_vec, b.src_vec) for a, b in zip(again, fp32))


def test_int8_copy_follows_weight_changes(encoder_dir):  # noqa: F811
    m = model(encoder_dir, finetune=True, context="pair")
    m.eval()
    enc = m.encoder.set_precision("int8")
    ps = [(p.src, p.tgt) for p in pairs()]
    from aligners.models.mono.neural import pair_vectors

    with torch.no_grad():
        before = pair_vectors(enc, ps)
        assert enc._quantised() is enc._quantised()  # built once while the weights stay
        m.encoder_net.embeddings.word_embeddings.weight.mul_(-1.0)
        after = pair_vectors(enc, ps)
    assert not torch.allclose(before[0][0], after[0][0], atol=1e-3)


def test_bad_precision_and_cli_flag(encoder_dir, tmp_path, capsys):  # noqa: F811
    from tests.conftest import monoalign_lines

    m = model(encoder_dir, context="pair")
    with pytest.raises(AlignersInputError, match="encoder precision must be one of"):
        MonoAligner({"s2t": m}, kind="neural", encoder_precision="fp16")
    al = MonoAligner({"s2t": m}, kind="neural")
    with pytest.raises(AlignersInputError, match="encoder precision must be one of"):
        al.align(pairs(), encoder_precision="int4")
    with pytest.raises(AlignersInputError, match="encoder precision must be one of"):
        m.encoder.set_precision("half")
    if not torch.cuda.is_available():
        m.encoder.device = "cuda"  # int8 is a CPU path: a clear error, not a torch traceback
        with pytest.raises(AlignersInputError, match="CPU only"):
            m.encoder._quantised()
        m.encoder.device = "cpu"
    folder = al.save(tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text("the cat sat ||| a cat was sitting\nbig house ||| the big home\n",
                   encoding="utf-8")
    outs = {}
    for precision in ("fp32", "bf16", "int8"):
        outs[precision] = monoalign_lines(capsys, folder, src, "--score",
                                          "--encoder-precision", precision)
        assert len(outs[precision]) == 2
    fp32 = al.align([(("the", "cat", "sat"), ("a", "cat", "was", "sitting")),
                     (("big", "house"), ("the", "big", "home"))], encoder_precision="fp32")
    assert [line.split(" ||| ")[0] for line in outs["fp32"]] == [
        " ".join(f"{i}-{j}" for i, j in links) for _, links, _ in fp32]
    with pytest.raises(SystemExit):
        monoalign_lines(capsys, folder, src, "--encoder-precision", "fp16")


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("finetune", [False, True])
def test_batched_equals_one_by_one_per_precision(encoder_dir, finetune, precision):  # noqa: F811
    al = MonoAligner({"s2t": model(encoder_dir, finetune=finetune, context="pair", seed=2)},
                     kind="neural", encoder_precision=precision)
    assert_batched_equals_one_by_one(al)
    assert al.models["s2t"].encoder.precision == precision



def test_default_decode_batch(encoder_dir, monkeypatch):  # noqa: F811
    """`align` without batch_size decodes the neural aligner in batches of 32 (token /
    phrase CRFs: 64); an explicit value wins."""
    from aligners.models.mono import aligner as aligner_mod

    seen = []
    real = aligner_mod.predict
    monkeypatch.setattr(aligner_mod, "predict",
                        lambda m, ex, batch_size, **k: seen.append(batch_size)
                        or real(m, ex, batch_size=batch_size, **k))
    MonoAligner({"s2t": model(encoder_dir)}, kind="neural").align(pairs())
    MonoAligner({"s2t": model(encoder_dir)}, kind="neural").align(pairs(), batch_size=5)
    MonoAligner({"s2t": aligner_mod.build_model(kind="token")}, kind="token").align(pairs())
    assert seen == [32, 5, 64]
    assert aligner_mod.DECODE_BATCH["phrase"] == 64
