"""Neural semi-Markov CRF aligner (aligners.models.mono.neural) with a tiny random BERT encoder
built in the test (no network, no packaged weights): lattice gradients, batched == one-by-one
decoding, save/load round trips (frozen and fine-tuned encoder), bad input."""

import argparse
import json
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aligners.data.types import AlignedPair, Alignment  # noqa: E402
from aligners.errors import AlignersInputError  # noqa: E402
from aligners.models.mono.aligner import MonoAligner, build_model, chunks, featurise  # noqa: E402

WORDS = ("the a cat cats dog sat on mat rug was sitting is big small house home in "
         "of and to he she it").split()


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_encoder(tmp_path_factory.mktemp("tiny_bert"))


def tiny_encoder(d):
    """A 2-layer, 16-d random BERT + word-piece tokenizer saved as a Hugging Face folder."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s", "##ing"]
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = transformers.BertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=32,
                                  max_position_embeddings=64)
    transformers.BertModel(cfg).save_pretrained(str(d))
    tok.save_pretrained(str(d))
    return str(d)


def model(encoder_dir, *, finetune=False, seed=0, **kw):
    torch.manual_seed(seed)
    m = build_model(kind="neural", max_src_len=2, max_tgt_len=2, proj=8, hidden=8,
                    finetune=finetune, encoder={"path": encoder_dir}, **kw)
    with torch.no_grad():  # sparse weights start at 0: give them values so they matter
        for p in (m.w_emit, m.w_null, m.w_trans):
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + 1)))
    return m


def pairs():
    return [
        AlignedPair(("the", "cat", "sat"), ("a", "cat", "was", "sitting"),
                    Alignment(frozenset({(0, 0), (1, 1), (2, 2), (2, 3)}), frozenset())),
        AlignedPair(("he", "sat", "on", "the", "mat"), ("she", "sat", "on", "a", "rug"),
                    Alignment(frozenset({(1, 1), (2, 2), (3, 3), (4, 4)}), frozenset())),
        AlignedPair(("big", "house"), ("the", "big", "home", "is", "small"),
                    Alignment(frozenset({(0, 1), (1, 2)}), frozenset())),
        AlignedPair(("it", "is", "a", "dog"), ("the", "dog"),
                    Alignment(frozenset({(3, 1), (2, 0)}), frozenset())),
    ]


def test_gradients_match_finite_differences(encoder_dir):
    m = model(encoder_dir).double()
    ex = featurise(pairs()[:1], m)
    (one,), _ = chunks(ex[:1], max_tgt_len=m.max_tgt_len, batch_size=1)
    emission = m.emission(one).detach().requires_grad_(True)

    def loss_of(e):  # softmax-margin through the factored semi-Markov log partition
        z = m.log_partition(m.factors(one, cost_weight=1.0, emission=e), one.lengths)
        g = m.log_partition(m.factors(one, gold_only=True, emission=e), one.lengths)
        return (z - g).sum()

    assert torch.autograd.gradcheck(loss_of, (emission,), eps=1e-6, atol=1e-5)
    # end to end: autograd vs central differences on scorer, projection and sparse weights
    batch = one
    m.zero_grad()
    m.loss(batch).backward()
    assert_central_differences(m, batch, (
        (m.out.weight, (0, 1)), (m.proj.weight, (2, 3)), (m.w_ab.weight, (1, 1)),
        (m.w_diff.weight, (0, 2)), (m.w_a.weight, (1, 0)), (m.tgt_len.weight, (1, 1)),
        (m.null_mlp[0].weight, (0, 0)), (m.w_emit, (0,)), (m.w_trans, (3,))))


def assert_central_differences(m, batch, params):
    """Each parameter entry's gradient (already in .grad from m.loss(batch).backward())
    equals the central difference of m.loss(batch) with step 1e-6 (rel 1e-4, abs 1e-6)."""
    for p, idx in params:
        grad = float(p.grad[idx])
        with torch.no_grad():
            old = float(p[idx])
            p[idx] = old + 1e-6
            up = float(m.loss(batch))
            p[idx] = old - 1e-6
            down = float(m.loss(batch))
            p[idx] = old
        assert math.isclose(grad, (up - down) / 2e-6, rel_tol=1e-4, abs_tol=1e-6), (p.shape, idx)


def test_finetuned_encoder_gets_gradients(encoder_dir):
    m = model(encoder_dir, finetune=True)
    ex = featurise(pairs(), m)
    assert all(e.src_vec is None for e in ex)  # computed in the forward pass
    (batch,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=4)
    m.loss(batch).backward()
    enc = [p for n, p in m.named_parameters() if n.startswith("encoder_net.")]
    assert enc and any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in enc)


def assert_batched_equals_one_by_one(al):
    """`al.align` of `pairs()` in one batch == each pair alone (blocks and links exactly,
    scores to 1e-5), and some pair gets links; returns the batched output."""
    together = al.align(pairs(), batch_size=4)
    alone = [al.align([p], batch_size=1)[0] for p in pairs()]
    for (b1, l1, s1), (b2, l2, s2) in zip(together, alone):
        assert (b1, l1) == (b2, l2)
        assert math.isclose(s1, s2, rel_tol=1e-5, abs_tol=1e-5)
    assert any(links for _, links, _ in together)
    return together


@pytest.mark.parametrize("finetune", [False, True])
def test_batched_equals_one_by_one(encoder_dir, finetune):
    assert_batched_equals_one_by_one(
        MonoAligner({"s2t": model(encoder_dir, finetune=finetune)}, kind="neural"))


@pytest.mark.parametrize("finetune", [False, True])
def test_save_load_round_trip(encoder_dir, tmp_path, finetune):
    import aligners

    m = model(encoder_dir, finetune=finetune, seed=3)
    if finetune:  # the saved encoder weights must be the trained ones, not the package's
        with torch.no_grad():
            m.encoder_net.embeddings.word_embeddings.weight.mul_(-1.5)
    al = MonoAligner({"s2t": m}, kind="neural")
    folder = al.save(tmp_path / "model")
    names = set(_tensor_names(folder))
    assert any(n.startswith("s2t.encoder_net.") for n in names) == finetune
    back = aligners.load(folder)
    assert isinstance(back, MonoAligner) and back.kind == "neural"
    assert back.align(pairs()) == al.align(pairs())


def _tensor_names(folder):
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        return list(f.keys())


def test_cli_monoalign_with_neural_model(encoder_dir, tmp_path, capsys):
    from aligners.commands import monoalign

    al = MonoAligner({"s2t": model(encoder_dir)}, kind="neural")
    folder = al.save(tmp_path / "model")
    src = tmp_path / "in.txt"
    src.write_text("the cat sat ||| a cat was sitting\nbig house ||| the big home\n",
                   encoding="utf-8")
    parser = argparse.ArgumentParser()
    monoalign.add_arguments(parser)
    args = parser.parse_args(["--model", str(folder), "-i", str(src), "--blocks"])
    assert monoalign.run(args) == 0
    lines = capsys.readouterr().out.splitlines()
    expect = al.align([(p.src, p.tgt) for p in pairs()[:1]])[0][1]
    assert lines[0].split(" ||| ")[0] == " ".join(f"{i}-{j}" for i, j in expect)
    if not torch.cuda.is_available():
        args = parser.parse_args(["--model", str(folder), "-i", str(src), "--device", "cuda"])
        with pytest.raises(AlignersInputError, match="cuda"):
            monoalign.run(args)


def test_bad_input(encoder_dir, tmp_path):
    import aligners

    with pytest.raises(AlignersInputError, match="encoder must be"):
        build_model(kind="neural", encoder={"package": "no-such-package"})
    with pytest.raises(AlignersInputError, match="16-d vectors"):
        build_model(kind="neural", encoder={"path": encoder_dir}, dim=384)
    with pytest.raises(ValueError, match="unknown model settings"):
        build_model(kind="phrase", proj=8)
    folder = MonoAligner({"s2t": model(encoder_dir)}, kind="neural").save(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model"]["encoder"] = {"path": str(tmp_path / "missing")}
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(AlignersInputError):
        aligners.load(folder)


def test_factored_scorer_equals_the_direct_mlp(encoder_dir):
    """The bilinear rewrite of the first layer == MLP([a, b, a*b, (a-b)^2]) span pair by pair."""
    from aligners.models.mono.states import state_table

    m = model(encoder_dir, seed=5).double()
    ex = featurise(pairs()[:1], m)
    (batch,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=1)
    pair, null = m.span_scores(batch)
    e = ex[0]
    S, T = m.proj(e.src_vec.double()), m.proj(e.tgt_vec.double())
    st = state_table(tgt_len=len(e.tgt), max_tgt_len=m.max_tgt_len)
    W1 = torch.cat([m.w_a.weight, m.w_b.weight, m.w_ab.weight, m.w_diff.weight], 1)
    checked = 0
    for n in range(len(e.src)):
        for k in range(1, m.max_src_len + 1):
            if n + k > len(e.src):
                continue
            a = S[n: n + k].mean(0) + m.src_len.weight[k - 1]
            for c in range(1, st["start"].shape[0]):
                s0, ln = int(st["start"][c]), int(st["length"][c])
                if s0 < 0:
                    continue
                b = T[s0: s0 + ln].mean(0) + m.tgt_len.weight[ln - 1]
                h = torch.relu(W1 @ torch.cat([a, b, a * b, (a - b) ** 2]) + m.w_a.bias)
                want = m.out(h).item()
                assert math.isclose(float(pair[0, n, k - 1, c]), want, rel_tol=1e-9,
                                    abs_tol=1e-9)
                checked += 1
    assert checked > 10 and float(pair[0, :, :, 0].abs().sum()) == 0.0
    assert math.isclose(float(null[0, 1]), float(m.null_mlp(S[1])), rel_tol=1e-9)


def _compositions(n, kmax):
    if n == 0:
        yield ()
        return
    for k in range(1, min(kmax, n) + 1):
        for rest in _compositions(n - k, kmax):
            yield (k, *rest)


@pytest.mark.parametrize("which", [0, 2])
def test_log_partition_and_viterbi_equal_brute_force(encoder_dir, which):
    """log Z and the Viterbi path of the neural potentials == enumeration of every
    segmentation x labelling (tiny pair)."""
    import itertools

    m = model(encoder_dir, seed=7).double()
    ex = featurise([pairs()[which]], m)
    (b,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=1)
    emit, trans, start = m.factors(b)
    I, C = len(ex[0].src), emit.shape[-1]
    scores, paths = [], []
    for ks in _compositions(I, m.max_src_len):
        starts = [sum(ks[:t]) for t in range(len(ks))]
        for labels in itertools.product(range(C), repeat=len(ks)):
            s = start[0, labels[0]]
            for t, (n, k, c) in enumerate(zip(starts, ks, labels)):
                s = s + emit[0, n, k, c] + (trans[0, c, labels[t - 1]] if t else 0)
            scores.append(s)
            paths.append([(n, k, c) for n, k, c in zip(starts, ks, labels)])
    scores = torch.stack(scores)
    brute = torch.logsumexp(scores, 0)
    assert torch.isclose(m.log_partition((emit, trans, start), b.lengths)[0], brute,
                         rtol=1e-9, atol=1e-9)
    best, (path,) = m.viterbi((emit, trans, start), b.lengths)
    assert torch.isclose(best[0], scores.max(), rtol=1e-9)
    assert path == paths[int(scores.argmax())]


def test_train_with_dev_selection_then_evaluate(encoder_dir, tmp_path, capsys):
    """`train.py experiment=neural_msr06` (tiny encoder, few pairs): AdamW, best epoch on the
    held-out selection pairs, one model folder that `evaluate` scores identically."""
    from omegaconf import open_dict

    from aligners.run import evaluate, train
    from tests.conftest import shared_path
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    small = ["experiment=neural_msr06", "data.train_limit=6", "data.test_limit=3",
             "training.select=2", "training.epochs=2", "model.proj=8", "model.hidden=8"]
    cfg = _cfg("train", small, tmp_path)
    with open_dict(cfg):
        cfg.model.encoder = {"path": encoder_dir}
    metrics = train(cfg)
    out = capsys.readouterr().out
    assert "selection micro F1" in out
    assert metrics["train"]["s2t/best_epoch"] in (0, 1)
    assert "s2t/select_f1_epoch1" in metrics["train"]
    saved = json.loads((tmp_path / "model" / "config.json").read_text())
    assert saved["kind"] == "mono-neural-crf" and saved["model"]["encoder"] == {
        "path": encoder_dir}
    ecfg = _cfg("evaluate", ["experiment=neural_msr06", "data.test_limit=3",
                             f"ckpt_path={tmp_path / 'model'}"], tmp_path / "eval")
    assert evaluate(ecfg)["test/s2t"] == metrics["test/s2t"]
    with open_dict(cfg):
        cfg.training.select = "dev"
    with pytest.raises(AlignersInputError, match="select=dev needs"):
        train(cfg)


def test_scorer_blocks_do_not_change_scores(encoder_dir, monkeypatch):
    """Memory-bounded scoring (hidden units in blocks of source positions) == one block."""
    from aligners.models.mono import neural

    m = model(encoder_dir, seed=9).double()
    ex = featurise(pairs(), m)
    (batch,), _ = chunks(ex, max_tgt_len=m.max_tgt_len, batch_size=4)
    whole, null = m.span_scores(batch)
    monkeypatch.setattr(neural, "CHUNK", 1)  # one source position per block
    blocks, null2 = m.span_scores(batch)
    assert torch.allclose(whole, blocks, rtol=1e-12, atol=1e-12) and torch.equal(null, null2)
