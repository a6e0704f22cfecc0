"""The batched torch sampler (an approximation: counts frozen per batch): learns the toy
bitext like the exact sampler when batches are small, is reproducible from its seed, and
runs on CUDA tensors where a GPU exists."""

import numpy as np
import pytest
import torch
from word_toy import toy_corpus

from aligners.models.bayes import BayesAligner, BayesConfig
from aligners.models.bayes.decode import direction_links

FAST = dict(iterations=[4, 4, 16], n_samplers=2, sampler="batched")


def _setup(n=60):
    src, tgt = toy_corpus(n, 0)
    pairs = list(zip(src, tgt, strict=True))
    gold = [{(i, j) for i, s in enumerate(a) for j, t in enumerate(b) if t == "t" + s[1:]}
            for a, b in pairs]
    return pairs, gold


def _precision(m, d, gold):
    links = direction_links(m, d)
    return sum(len(a & g) for a, g in zip(links, gold, strict=True)) / sum(map(len, links))


def test_small_batches_learn_the_toy_like_the_exact_sampler():
    pairs, gold = _setup()
    m = BayesAligner(BayesConfig(**FAST, batch_cells=200)).align(pairs, seed=0)
    for d in ("fwd", "rev"):
        assert _precision(m, d, gold) > 0.95
    for k in range(len(pairs)):  # marginals are probabilities per observed token
        assert (m.cells(k, "fwd").sum(0) <= 1 + 1e-5).all()
        assert (m.cells(k, "rev").sum(1) <= 1 + 1e-5).all()


def test_reproducible_from_the_seed():
    pairs, _ = _setup(30)
    a = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=5)
    b = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=5)
    c = BayesAligner(BayesConfig(**FAST)).align(pairs, seed=6)
    np.testing.assert_array_equal(a.fwd, b.fwd)
    assert not np.array_equal(a.fwd, c.fwd)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_runs_and_learns():
    pairs, gold = _setup()
    m = BayesAligner(BayesConfig(**FAST, batch_cells=200, device="cuda")).align(pairs, seed=0)
    assert _precision(m, "fwd", gold) > 0.95
