"""Task `phrasal_align` helpers: gappy-pattern counting and decoding choice on dev."""

import numpy as np
import pytest

from aligners.data.types import AlignedPair, Alignment
from aligners.models.phrasal import PhrasalConfig
from aligners.training.phrasal_align import choose, gappy_patterns


def _pair(src, tgt, sure, possible=()):
    return AlignedPair(tuple(src.split()), tuple(tgt.split()),
                       Alignment(frozenset(sure), frozenset(possible)))


def test_gappy_patterns_count_and_fully_right():
    gold = [_pair("i do not know", "je ne sais pas", {(0, 0), (2, 1), (2, 3), (3, 2)}, {(1, 2)}),
            _pair("he is not", "il n' est pas", {(0, 0), (1, 2), (2, 1), (2, 3)}),
            _pair("a b", "x y", {(0, 0), (1, 1)})]
    right = [[(0, 0), (2, 1), (2, 3), (3, 2), (1, 2)], [(0, 0), (1, 2), (2, 1)], [(0, 0)]]
    n, ok, n_np, ok_np = gappy_patterns(gold, right)
    assert (n, ok) == (2, 1)  # pair 2 misses not-pas
    assert (n_np, ok_np) == (1, 1)  # only pair 1 has `ne`; pair 2 has n'
    extra = [[(0, 0), (2, 1), (2, 3), (3, 2), (2, 0)], *right[1:]]  # a link outside possible
    assert gappy_patterns(gold, extra)[:2] == (2, 0)


def test_choose_picks_the_lowest_dev_aer():
    gold = [_pair("a b", "x y", {(0, 0), (1, 1)})]
    lf = np.array([[0.9, 0.2], [0.1, 0.45]], dtype=np.float32)
    lb = np.array([[0.8, 0.1], [0.2, 0.7]], dtype=np.float32)
    grid = {"methods": ["agreement", "posterior"], "thresholds": [0.1, 0.5],
            "heuristics": ["intersect"]}
    dec, aer = choose([(lf, lb)], [(lf > 0.5, lb > 0.5)], gold, grid)
    assert aer == 0.0 and dec == {"method": "agreement", "threshold": 0.1, "heuristic": "none"}


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="p0"):
        PhrasalConfig(p0=1.5)
    with pytest.raises(ValueError, match="max_phrase_len"):
        PhrasalConfig(max_phrase_len=40)
