"""The word aligner's model folder: save -> aligners.load -> identical alignments; errors."""

import json

import pytest
import torch
from word_toy import toy_corpus

import aligners
from aligners.data.bitext import build_index
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.families import by_kind
from aligners.models.aligned import RunOptions
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner, WordDecoding
from aligners.models.hmm.decode import decode_lines
from aligners.models.hmm.folder import KIND, TrainedWordAligner

TABLES = ("keys", "t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd", "jump_bwd")


@pytest.fixture(scope="module")
def trained():
    src, tgt = toy_corpus(50, seed=3)
    si, ti = WordIds(), WordIds()
    index = build_index(zip(src, tgt, strict=True), si, ti, cells=200)
    model = WordAligner.from_index(index, WordAlignConfig(ibm1_iterations=2, hmm_iterations=2,
                                                          max_jump=3, p0=0.2))
    model.fit(index)
    return model, si, ti, src, tgt


def test_save_then_aligners_load_gives_identical_alignments(tmp_path, trained):
    model, si, ti, src, tgt = trained
    dec = WordDecoding(method="posterior", threshold=0.25, symmetrize="intersect")
    TrainedWordAligner(model, si, ti).save_to(tmp_path / "m", dec)
    assert by_kind(KIND).name == "hmm" and by_kind(KIND).model_class() is TrainedWordAligner
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert (cfg["format"], cfg["kind"], cfg["model"]["p0"]) == ("aligners/1", KIND, 0.2)
    loaded = aligners.load(tmp_path / "m")
    assert isinstance(loaded, TrainedWordAligner) and loaded.decoding == dec
    assert loaded.src_ids.words == si.words and loaded.tgt_ids.words == ti.words
    assert loaded.src_ids.frozen and loaded.model.stage == "hmm"
    for name in TABLES:
        assert torch.equal(getattr(loaded.model, name), getattr(model, name)), name
    # new text (with unseen words) indexed by the loaded aligner, aligned by both models
    new_src = [*src[:20], ["s1", "zzz", "s2"]]
    new_tgt = [*tgt[:20], ["t1", "t2", "qqq"]]
    frozen_s, frozen_t = WordIds.from_json(si.words), WordIds.from_json(ti.words)
    a_index = build_index(zip(new_src, new_tgt, strict=True), frozen_s, frozen_t,
                          keys=model.keys)
    b_index = loaded.decode(zip(new_src, new_tgt, strict=True), RunOptions()).index
    for method in ("agreement", "posterior", "viterbi"):
        a = decode_lines(model, a_index, method=method, threshold=0.3, posteriors=True)
        b = decode_lines(loaded.model, b_index, method=method, threshold=0.3, posteriors=True)
        assert a == b
    assert sum(x.count("-") for x in a["fwd"]) > 40  # it really aligns something
    assert len(loaded.src_ids) == len(si)  # unseen words did not grow the vocabulary


def _break(folder, what):
    if what == "kind":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["kind"] = "mono-token-crf"
        (folder / "config.json").write_text(json.dumps(cfg))
    elif what == "vocab":
        (folder / "vocab.json").unlink()
    elif what == "vocab-size":
        v = json.loads((folder / "vocab.json").read_text())
        v["source"].pop()
        (folder / "vocab.json").write_text(json.dumps(v))
    elif what == "config-field":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["model"]["bogus"] = 1
        (folder / "config.json").write_text(json.dumps(cfg))
    elif what == "tensor-shape":
        from safetensors.torch import load_file, save_file

        t = load_file(str(folder / "model.safetensors"))
        t["t_fwd"] = t["t_fwd"][:-1].clone()
        save_file(t, str(folder / "model.safetensors"))


@pytest.mark.parametrize("what", ["vocab", "vocab-size", "config-field", "tensor-shape"])
def test_broken_folders_are_input_errors(tmp_path, trained, what):
    model, si, ti, _, _ = trained
    folder = TrainedWordAligner(model, si, ti).save_to(tmp_path / "m")
    _break(folder, what)
    with pytest.raises(AlignersInputError) as err:
        aligners.load(folder)
    assert "\n" not in str(err.value) and str(folder) in str(err.value)


def test_wrong_kind_is_refused_by_the_word_loader(tmp_path, trained):
    model, si, ti, _, _ = trained
    folder = TrainedWordAligner(model, si, ti).save_to(tmp_path / "m")
    _break(folder, "kind")
    with pytest.raises(AlignersInputError, match="kind"):
        TrainedWordAligner.from_folder(folder)
    with pytest.raises(ValueError, match="vocabularies"):
        TrainedWordAligner(model, WordIds(), ti).save_to(tmp_path / "x")
