"""The span-pair scorer of `NeuralCRFAligner.span_scores` after issue 13's speed work (rows
by source length, per-span terms accumulated by baddbmm_, smaller blocks) equals the scorer
it replaced (its MLP kept below verbatim as the reference, blocks of 1 << 23 elements, over
the model's own `_span_features`, which that work left unchanged) on random
weights and batches of mixed lengths: scores at every real source position (padding now
scores 0) and the gradients of every parameter, float64, with and without span cosines."""

import pytest
import torch

pytest.importorskip("transformers")

from test_mono_neural import encoder_dir, model, pairs  # noqa: E402,F401 (fixture)

from aligners.models.mono.aligner import chunks, featurise  # noqa: E402

REF_CHUNK = 1 << 23


def _reference_span_scores(self, batch):
    """(B, I, Ls, C) span-pair scores (column 0 = 0) and (B, I) NULL scores.
    O(B * I * Ls * C * proj * hidden), + O(B * I * Ls * C * D) with `cosine`."""
    B, I, Ls, C = batch.valid.shape
    S, a, bvec, lens, cos = self._span_features(batch)  # the span features are unchanged
    # MLP over [a, b, a*b, (a-b)^2]: per-span terms + one bilinear matrix product, over
    # blocks of source positions so that the hidden units stay under REF_CHUNK elements
    d, H = a.shape[-1], self.hidden
    per_a = self.w_a(a) + self.w_diff(a * a)  # (B, I, Ls, H)
    per_b = (self.w_b(bvec) + self.w_diff(bvec * bvec)).transpose(1, 2)[:, None, None]
    mix = self.w_ab.weight - 2 * self.w_diff.weight  # (H, d)
    bt = bvec.transpose(1, 2)  # (B, d, C)
    step = max(1, REF_CHUNK // max(1, B * Ls * H * C))
    parts = []
    for n0 in range(0, I, step):
        n1 = min(I, n0 + step)
        aw = (a[:, n0:n1].unsqueeze(-2) * mix).reshape(B, (n1 - n0) * Ls * H, d)
        h = torch.bmm(aw, bt).view(B, n1 - n0, Ls, H, C)
        h = h + per_a[:, n0:n1, ..., None] + per_b
        if cos is not None:
            h = h + self.w_cos(cos[:, n0:n1]).transpose(-1, -2)
        h = torch.relu(h)
        parts.append(torch.matmul(self.out.weight[0], h))  # (B, n1-n0, Ls, C)
    pair = torch.cat(parts, 1) + self.out.bias
    if cos is not None:
        pair = pair + self.out_cos(cos).squeeze(-1)
    pair = pair.masked_fill((lens == 0)[:, None, None, :], 0.0)  # NULL column
    null = self.null_mlp(S).squeeze(-1)
    return pair, null


@pytest.mark.parametrize("context,cosine", [("separate", False), ("pair", True),
                                            ("both", False)])
@pytest.mark.parametrize("chunk", [1, 1 << 19])
def test_scorer_equals_the_previous_scorer(encoder_dir, monkeypatch, context,  # noqa: F811
                                           cosine, chunk):
    from aligners.models.mono import neural

    monkeypatch.setattr(neural, "CHUNK", chunk)
    m = model(encoder_dir, seed=11, context=context, cosine=cosine).double()
    with torch.no_grad():  # random scorer weights, not the initial ones
        g = torch.Generator().manual_seed(3)
        for p in m.parameters():
            if p.requires_grad:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.5)
    ps = pairs()
    ps = [ps[2], ps[0], ps[3], ps[1]]  # not sorted by source length
    (batch,), _ = chunks(featurise(ps, m), max_tgt_len=m.max_tgt_len, batch_size=4)
    real = torch.zeros(batch.valid.shape[:2], dtype=torch.bool)
    for b, e in enumerate(batch.examples):
        real[b, : len(e.src)] = True
    assert not real.all()  # the batch has padded source positions
    params = [p for p in m.parameters() if p.requires_grad]
    got, null = m.span_scores(batch)
    want, null_ref = _reference_span_scores(m, batch)
    assert torch.allclose(got[real], want[real], rtol=1e-10, atol=1e-10)
    assert float(got.detach()[~real].abs().sum()) == 0.0
    assert torch.equal(null, null_ref)
    weight = torch.randn(got.shape, generator=g, dtype=got.dtype) * real[..., None, None]
    g_new = torch.autograd.grad((got * weight).sum(), params, allow_unused=True)
    g_old = torch.autograd.grad((want * weight).sum(), params, allow_unused=True)
    for p, x, y in zip(params, g_new, g_old):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert torch.allclose(x, y, rtol=1e-9, atol=1e-10), p.shape
