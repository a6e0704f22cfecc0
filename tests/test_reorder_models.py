"""Reordering models: dual gradient vs autograd, EG descent, NB/MI/lexical vs hand computation."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from aligners.errors import AlignersInputError
from aligners.features.reorder import csr_to_torch
from aligners.models.reorder import (
    DualMLR,
    LexicalReordering,
    NaiveBayes,
    PrimalMLR,
    mutual_information,
)
from aligners.models.reorder._common import sparse_matmul


def dual_weights(X, labels, alpha, *, sigma2):
    """Eq. 10: (F, K) w(alpha) = sigma^2 X^T (onehot(y) - alpha)."""
    y = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    resid = torch.nn.functional.one_hot(y, alpha.shape[1]).to(alpha.dtype) - alpha
    return sigma2 * torch.sparse.mm(X.to_sparse_coo().t().to(alpha.dtype), resid)


def dual_objective(X, labels, alpha, *, sigma2):
    """Eq. 9: D(alpha) for (E, F) CSR X, (E,) labels, (E, K) alpha (differentiable)."""
    W = dual_weights(X, labels, alpha, sigma2=sigma2)
    return 0.5 / sigma2 * (W * W).sum() + (alpha * alpha.clamp_min(1e-300).log()).sum()


def eq12_gradient(X, labels, alpha, *, sigma2):
    """(E, K) gradient of Eq. 12: 1 + log alpha_ik + w_y . phi_i - w_k . phi_i; it equals
    dD/dalpha plus a per-example constant (w_y . phi_i), which EG's normalisation and the
    max-min gap of Eq. 16 both ignore."""
    s = sparse_matmul(X, dual_weights(X, labels, alpha, sigma2=sigma2))
    y = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    return 1.0 + alpha.log() + s.gather(1, y[:, None]) - s


def primal_objective(X, labels, W, *, sigma2):
    """Eq. 6 at W (F, K) on (E, F) CSR features and (E,) labels."""
    y = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    nll = -(sparse_matmul(X, W).log_softmax(dim=1).gather(1, y[:, None])).sum()
    return float(0.5 / sigma2 * (W * W).sum() + nll)


def _toy(n=40, f=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.integers(0, 3, size=(n, f)) * (rng.random((n, f)) < 0.5)
    y = rng.integers(0, k, size=n)
    return csr_to_torch(sp.csr_matrix(dense.astype(np.float32))), dense.astype(np.float64), y


def _random_simplex(n, k, seed):
    a = torch.rand(n, k, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) + 0.05
    return a / a.sum(dim=1, keepdim=True)


def test_eq12_gradient_matches_autograd_up_to_the_per_example_constant():
    X, dense, y = _toy()
    alpha = _random_simplex(len(y), 3, 1).requires_grad_(True)
    dual_objective(X, y, alpha, sigma2=0.7).backward()
    auto = alpha.grad
    eq12 = eq12_gradient(X, y, alpha.detach(), sigma2=0.7)
    W = 0.7 * dense.T @ (np.eye(3)[y] - alpha.detach().numpy())
    s_y = (dense @ W)[np.arange(len(y)), y]
    torch.testing.assert_close(eq12 - torch.from_numpy(s_y)[:, None], auto)
    # the max-min gap (Eq. 16) is the same for both
    gap = lambda g: g.max(dim=1).values - g.min(dim=1).values  # noqa: E731
    torch.testing.assert_close(gap(eq12), gap(auto))


def test_eg_decreases_dual_objective_and_keeps_w_of_alpha():
    X, _, y = _toy(seed=2)
    model = DualMLR(num_features=X.shape[1], sigma2=0.5)
    state, gen, objs = model.begin_fit(X, y), torch.Generator().manual_seed(3), []
    while len(objs) < 15 and model.fit_epoch(state, generator=gen, eps=0.0) is not None:
        objs.append(float(dual_objective(X, y, torch.from_numpy(model.alpha), sigma2=0.5)))
    assert all(b <= a + 1e-9 for a, b in zip(objs, objs[1:]))
    alpha = torch.from_numpy(model.alpha)
    # initial objective (Eq. 15 start) is larger than every later one
    init = torch.full_like(alpha, 1e-3 / 2)
    init[torch.arange(len(y)), torch.as_tensor(y)] = 1 - 1e-3
    assert float(dual_objective(X, y, init, sigma2=0.5)) > objs[0]
    assert math.isclose(float(dual_objective(X, y, alpha, sigma2=0.5)), objs[-1], rel_tol=1e-9)
    # Eq. 14 maintained w(alpha) exactly
    torch.testing.assert_close(model.weight, dual_weights(X, y, alpha, sigma2=0.5))
    torch.testing.assert_close(alpha.sum(dim=1), torch.ones(len(y), dtype=torch.float64))


def _primal_optimum(X, y, sigma2):
    W = torch.zeros(X.shape[1], 3, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([W], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-14,
                            line_search_fn="strong_wolfe")
    Xd = X.to_dense().double()
    yt = torch.as_tensor(y)

    def closure():
        opt.zero_grad()
        nll = -(Xd @ W).log_softmax(1)[torch.arange(len(y)), yt].sum()
        loss = 0.5 / sigma2 * (W * W).sum() + nll
        loss.backward()
        return loss

    opt.step(closure)
    return W.detach()


def test_dual_and_primal_reach_the_same_optimum():
    X, _, y = _toy(n=60, seed=4)
    w_star = _primal_optimum(X, y, sigma2=1.0)
    dual = DualMLR(num_features=X.shape[1], sigma2=1.0).fit(X, y, eps=1e-10, max_iter=400)
    torch.testing.assert_close(dual.weight, w_star, atol=1e-4, rtol=1e-4)
    primal = PrimalMLR(num_features=X.shape[1], sigma2=1.0)
    primal.fit(X, y, epochs=300, lr=0.05, generator=torch.Generator().manual_seed(0))
    best = primal_objective(X, y, w_star, sigma2=1.0)
    start = primal_objective(X, y, torch.zeros_like(w_star), sigma2=1.0)
    assert primal_objective(X, y, primal.weight, sigma2=1.0) - best < 0.01 * (start - best)


def test_shrinking_removes_examples_and_larger_eps_shrinks_faster():
    X, _, y = _toy(n=200, seed=5)
    fracs = {}
    for eps in (0.01, 1.0):
        m = DualMLR(num_features=X.shape[1]).fit(X, y, eps=eps, max_iter=5)
        fracs[eps] = [h["active_fraction"] for h in m.history]
        assert fracs[eps][0] == 1.0
        assert all(b <= a for a, b in zip(fracs[eps], fracs[eps][1:]))
    assert sum(fracs[1.0]) < sum(fracs[0.01])


def test_naive_bayes_map_and_bayesian_by_hand():
    # 3 examples, 2 features, 2 classes
    dense = np.array([[2, 0], [1, 1], [0, 3]], dtype=np.float32)
    y = np.array([0, 0, 1])
    X = csr_to_torch(sp.csr_matrix(dense))
    nb = NaiveBayes(num_features=2, num_classes=2, alpha=2.0).fit(X, y)
    # counts: class 0 -> (3, 1), class 1 -> (0, 3); M = 2, alpha - 1 = 1
    q = torch.tensor([[4 / 6, 1 / 5], [2 / 6, 4 / 5]], dtype=torch.float64)
    torch.testing.assert_close(nb.log_q().exp(), q)
    x = csr_to_torch(sp.csr_matrix(np.array([[1, 2]], dtype=np.float32)))
    prior = np.array([2 / 3, 1 / 3])
    lik = np.array([(4 / 6) * (2 / 6) ** 2, (1 / 5) * (4 / 5) ** 2])
    post = prior * lik / (prior * lik).sum()
    np.testing.assert_allclose(nb.predict_log_proba(x).exp().numpy()[0], post)
    # Bayesian predictive: beta = alpha + counts = [[5, 2], [3, 5]] (feature x class)
    bayes = NaiveBayes(num_features=2, num_classes=2, alpha=2.0, inference="bayes").fit(X, y)
    lg = math.lgamma

    def pred(b1, b2):
        return lg(b1 + b2) - lg(b1 + b2 + 3) + lg(b1 + 1) - lg(b1) + lg(b2 + 2) - lg(b2)

    logl = np.array([pred(5, 3), pred(2, 5)])
    np.testing.assert_allclose(bayes.log_likelihood(x).numpy()[0], logl)
    post = prior * np.exp(logl) / (prior * np.exp(logl)).sum()
    np.testing.assert_allclose(bayes.predict_log_proba(x).exp().numpy()[0], post)
    with pytest.raises(AlignersInputError):
        NaiveBayes(num_features=2, alpha=1.0)


def test_mutual_information_toy_table():
    # feature 0 = class exactly, feature 1 present everywhere, feature 2 independent
    dense = np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0]], dtype=np.float32)
    y = np.array([0, 0, 1, 1])
    X = csr_to_torch(sp.csr_matrix(dense))
    mi = mutual_information(X, y, num_classes=2, normalized=False).numpy()
    np.testing.assert_allclose(mi, [math.log(2), 0.0, 0.0], atol=1e-12)
    nmi = mutual_information(X, y, num_classes=2).numpy()
    np.testing.assert_allclose(nmi, [1.0, 0.0, 0.0], atol=1e-12)
    # a partly informative feature: p(x=1|y=0) = 1, p(x=1|y=1) = 1/2
    dense2 = np.array([[1], [1], [1], [0]], dtype=np.float32)
    mi2 = mutual_information(csr_to_torch(sp.csr_matrix(dense2)), y, num_classes=2,
                             normalized=False).item()
    hand = 0.5 * math.log(0.5 / (0.75 * 0.5)) + 0.25 * math.log(0.25 / (0.75 * 0.5)) \
        + 0.25 * math.log(0.25 / (0.25 * 0.5))
    assert math.isclose(mi2, hand, rel_tol=1e-12)


def test_lexical_relative_frequency_with_moses_smoothing(tmp_path):
    keys = np.array([7, 7, 7, 9, 9, 9, 9, 9])
    labels = np.array([0, 0, 1, 0, 0, 0, 2, 2])
    lex = LexicalReordering(smoothing=0.5).fit(keys, labels)
    s = 0.5 * (np.array([5, 1, 2]) + 0.1) / 8
    np.testing.assert_allclose(lex.smoothing_vector(), s)
    p7 = (np.array([2, 1, 0]) + s) / (3 + s.sum())
    got = lex.predict_log_proba(np.array([7, 123])).exp().numpy()
    np.testing.assert_allclose(got[0], p7)
    np.testing.assert_allclose(got[1], s / s.sum())  # unseen pair: class prior
    with open(tmp_path / "t", "w", encoding="utf-8") as out:
        n = lex.write_moses_table(out, [("a", "x", 7), ("a", "x", 7), ("b", "y", 9), ("c", "z", 5)])
    lines = (tmp_path / "t").read_text().splitlines()
    assert n == 2 and lines[0].startswith("a ||| x ||| ") and lines[1].startswith("b ||| y ||| ")
    np.testing.assert_allclose([float(v) for v in lines[0].split("|||")[2].split()], p7, atol=1e-6)
    lex.save(tmp_path / "lex")
    again = LexicalReordering.load(tmp_path / "lex")
    torch.testing.assert_close(again.predict_log_proba(keys), lex.predict_log_proba(keys))


def test_models_round_trip_without_pickle(tmp_path):
    X, _, y = _toy(seed=6)
    for model, cls in [
        (PrimalMLR(num_features=6).fit(X, y, epochs=2), PrimalMLR),
        (DualMLR(num_features=6).fit(X, y, max_iter=2), DualMLR),
        (NaiveBayes(num_features=6, inference="bayes").fit(X, y), NaiveBayes),
    ]:
        model.save(tmp_path / cls.__name__)
        assert sorted(p.name for p in (tmp_path / cls.__name__).iterdir()) == [
            "config.json", "model.safetensors"]
        again = cls.load(tmp_path / cls.__name__)
        torch.testing.assert_close(again.predict_log_proba(X), model.predict_log_proba(X),
                                   atol=1e-5, rtol=1e-5)
    with pytest.raises(AlignersInputError):
        PrimalMLR.load(tmp_path / "NaiveBayes")


def test_feature_selection_keeps_columns():
    X, dense, y = _toy(seed=7)
    nb = NaiveBayes(num_features=6).fit(X, y)
    keep = np.array([0, 2, 5])
    small = nb.select(keep)
    Xs = csr_to_torch(sp.csr_matrix(dense[:, keep].astype(np.float32)))
    ref = NaiveBayes(num_features=3).fit(Xs, y)
    torch.testing.assert_close(small.predict_log_proba(Xs), ref.predict_log_proba(Xs))
