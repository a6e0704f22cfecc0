"""Table 5 scoring helpers vs hand-worked values."""

import pytest

from aligners.applications import (
    accuracy_prf,
    mean_average_precision,
    mean_reciprocal_rank,
    tokenize,
    tune_threshold,
)


def test_tokenize_ptb_like():
    assert tokenize("The U.S. company's shares didn't rise, 1,200 said.") == [
        "The", "U.S.", "company", "'s", "shares", "did", "n't", "rise", ",", "1,200",
        "said", "."]


def test_map_mrr_hand_values():
    # AP([0,1,0,1]) = (1/2 + 2/4) / 2 = 0.5; AP([1,0]) = 1
    assert mean_average_precision([[0, 1, 0, 1], [1, 0]]) == pytest.approx(0.75)
    # RR = 1/2, 1, 0 (no relevant item)
    assert mean_reciprocal_rank([[0, 1, 0, 1], [1, 0], [0, 0]]) == pytest.approx(0.5)


def test_threshold_tuning_and_prf():
    scores, labels = [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]
    thr, acc = tune_threshold(scores, labels)
    assert acc == pytest.approx(0.75)
    assert accuracy_prf(scores, labels, thr)[0] == pytest.approx(0.75)
    # threshold 0.3: predicts 0,1,1,1 -> acc 3/4, precision 2/3, recall 1
    assert accuracy_prf(scores, labels, 0.3) == pytest.approx((0.75, 2 / 3, 1.0))
    thr, acc = tune_threshold([0.2, 0.9], [0, 1])
    assert acc == 1.0 and 0.2 < thr < 0.9
