"""`featurise` runs a neural model's encoder in a second thread while it computes the sparse
features: the examples (features, gold, word vectors) must equal the one-thread path's, in
both directions, and an encoder error must reach the caller."""

import dataclasses

import pytest
import torch

pytest.importorskip("transformers")

from test_mono_neural import encoder_dir, model, pairs  # noqa: E402,F401 (fixture)

from aligners.models.mono.aligner import featurise, flip, prepare  # noqa: E402


def _sequential(ps, m, direction):
    """The pre-overlap path: features, then `attach` on the full examples."""
    out = []
    for p in ps:
        p = flip(p) if direction == "t2s" else p
        out.append(prepare(p.src, p.tgt, p.alignment.possible, max_src_len=m.max_src_len,
                           max_tgt_len=m.max_tgt_len))
    return m.attach(out)


@pytest.mark.parametrize("direction", ["s2t", "t2s"])
def test_overlapped_featurise_equals_sequential(encoder_dir, direction):  # noqa: F811
    m = model(encoder_dir)
    got = featurise(pairs(), m, direction=direction)
    m.encoder._cache.clear()
    want = _sequential(pairs(), m, direction)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if torch.is_tensor(x):
                assert torch.equal(x, y), f.name
            else:
                assert x == y, f.name


def test_encoder_error_reaches_the_caller(encoder_dir, monkeypatch):  # noqa: F811
    m = model(encoder_dir)

    def boom(_examples):
        raise RuntimeError("encoder failed")

    monkeypatch.setattr(m, "attach", boom)
    with pytest.raises(RuntimeError, match="encoder failed"):
        featurise(pairs(), m)
