"""Offline WordNet reader: known relations (skip only when the database is absent)."""

import pytest

from aligners.features.wordnet import RELATIONS, WordNet, get_wordnet, wordnet_dir


def _rels(wn, a, b):
    return {r for r, v in zip(RELATIONS, wn.relations(a, b)) if v}


@pytest.fixture(scope="module")
def wn():
    if wordnet_dir() is None:
        pytest.skip("WordNet database not installed (apt-get install wordnet-base)")
    return get_wordnet()


def test_known_relations(wn):
    assert "synonym" in _rels(wn, "car", "automobile")
    assert "hypernym" in _rels(wn, "dog", "canine")
    assert "hyponym" in _rels(wn, "canine", "dog")
    assert "antonym" in _rels(wn, "good", "bad")
    assert "derivation" in _rels(wn, "decide", "decision")
    assert "entailment" in _rels(wn, "snore", "sleep")
    assert _rels(wn, "car", "banana") == set()


def test_morphology(wn):
    assert ("go", "v") in wn.base_forms("went")  # exception list
    assert ("cat", "n") in wn.base_forms("cats")  # suffix rule
    assert "synonym" in _rels(wn, "buying", "purchase")


def test_fallback_without_database():
    empty = WordNet(None)
    assert not empty.synsets("car")
    assert empty.relations("car", "automobile") == (False,) * len(RELATIONS)


def test_hypernym_and_hyponym_pointers_mirror_each_other(wn):
    """`relations` reads "a has hyponym b" from b's hypernym closure: exact only because
    every hyponym pointer X -> Y has the hypernym pointer Y -> X and back (all synsets)."""
    edges = {"hypernym": set(), "hyponym": set()}
    keys = {k for ks in wn._index.values() for k in ks}
    for k in keys:
        for rel, target, _, _ in wn._synset(k)[1]:
            if rel in edges:
                edges[rel].add((k, target))
    assert len(keys) > 100_000 and len(edges["hyponym"]) > 90_000
    assert {(t, k) for k, t in edges["hyponym"]} == edges["hypernym"]


def test_hyponym_relation_equals_the_hyponym_closure(wn):
    """The hyponym column equals the direct definition (b's synsets meet a's hyponyms within
    2 steps) on word pairs with many hyponyms and none."""
    words = ["animal", "dog", "canine", "mammal", "puppy", "person", "worker", "vehicle",
             "car", "truck", "sedan", "food", "fruit", "apple", "move", "walk", "run",
             "stroll", "color", "red", "crimson", "organism", "beagle", "hound", "entity"]
    col = RELATIONS.index("hyponym")
    hits = 0
    for a in words:
        for b in words:
            sa, sb = wn.synsets(a), wn.synsets(b)
            want = bool(sa and sb and wn._word_closure(a, "hyponym", 2) & sb)
            assert wn.relations(a, b)[col] == want, (a, b)
            hits += want
    assert hits > 10
