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
    assert not empty.available
    assert empty.relations("car", "automobile") == (False,) * len(RELATIONS)
