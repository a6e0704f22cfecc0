"""Phrase-pair features (EMNLP Table 1): word-pair + context features, min-count, CSR counts."""

import numpy as np

from aligners.features.reorder import (
    ReorderFeaturizer,
    collect_examples,
    fit_feature_vocab,
    phrase_key,
    to_csr,
)


def _names(feat, raw, e):
    codes = raw.codes[raw.indptr[e]:raw.indptr[e + 1]]
    return sorted(tuple(x) for x in feat.describe(codes))


def test_table1_style_features():
    # f: f1 f2 f3 ; e: e1 e2 ; f1, f2 -> e1 ; f3 -> e2
    src, tgt = "f1 f2 f3".split(), "e1 e2".split()
    links = [(0, 0), (1, 0), (2, 1)]
    feat = ReorderFeaturizer()
    raw = collect_examples([(src, tgt, links)], feat, max_length=2)
    first = _names(feat, raw, 0)  # "f1 f2 ||| e1": two word pairs, context <s> and f3
    assert first == sorted([("pair", "f1", "e1"), ("pair", "f2", "e1"),
                            ("left", "<s>", None), ("right", "f3", None)])
    assert raw.labels[0] == 0  # mono (sentence start)
    assert raw.keys[0] == phrase_key("f1 f2", "e1")
    assert raw.sentence.tolist() == [0] * len(raw)
    no_ctx = ReorderFeaturizer(context=False)
    raw2 = collect_examples([(src, tgt, links)], no_ctx, max_length=2)
    assert _names(no_ctx, raw2, 0) == sorted([("pair", "f1", "e1"), ("pair", "f2", "e1")])


def test_min_count_on_training_rows_only_and_csr_counts():
    feat = ReorderFeaturizer(context=False)
    corpus = [(["a", "a"], ["x"], [(0, 0), (1, 0)])] * 3 + [(["b"], ["y"], [(0, 0)])]
    raw = collect_examples(corpus, feat)
    rows = np.arange(len(raw))
    train = rows[raw.sentence < 3]
    vocab = fit_feature_vocab(raw, train, min_count=6)  # a&x occurs twice per pair
    assert [tuple(v) for v in feat.describe(vocab)] == [("pair", "a", "x")]
    assert len(fit_feature_vocab(raw, train, min_count=7)) == 0
    X = to_csr(raw, rows, vocab)
    assert X.shape == (4, 1)
    np.testing.assert_array_equal(X.toarray()[:, 0], [2, 2, 2, 0])  # repeated feature counted


def test_exported_feature_list_round_trips():
    feat = ReorderFeaturizer()
    corpus = [("a b c".split(), "x y z".split(), [(0, 0), (1, 2), (2, 1)])]
    raw = collect_examples(corpus, feat)
    vocab = fit_feature_vocab(raw, np.arange(len(raw)), min_count=1)
    described = feat.describe(vocab)
    again, codes = ReorderFeaturizer.from_described(described)
    assert again.describe(codes) == described
    raw2 = collect_examples(corpus, again, grow=False)
    order = np.argsort(codes)
    X1 = to_csr(raw, np.arange(len(raw)), vocab).toarray()
    X2 = to_csr(raw2, np.arange(len(raw2)), codes[order]).toarray()[:, np.argsort(order)]
    np.testing.assert_array_equal(X1, X2)
    # unknown words give no features instead of growing the vocabulary
    raw3 = collect_examples([(["q"], ["r"], [(0, 0)])], again, grow=False)
    assert len(raw3) == 1 and len(raw3.codes) == 2  # only the contexts <s> and </s>
