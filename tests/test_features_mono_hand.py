"""Monolingual features against values derived BY HAND (not produced by the code under test):
identical / lower-cased identity, edit distance, character-trigram Dice, prefix, position,
context, WordNet synonymy, NULL features and the phrasal block rule of Yao et al. 2013, 3.4.

Derivations are in the comments; fractional values are compared after the same float16
rounding the features are stored in (`featurize_states` keeps them in float16).
"""

import pytest
import torch

from aligners.features.monolingual import feature_names, featurize_states
from aligners.features.wordnet import wordnet_dir
from aligners.models.mono.states import state_id

needs_wordnet = pytest.mark.skipif(wordnet_dir() is None, reason="WordNet not installed")


def _half(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32).half())


def _token(src, tgt):
    """name -> (I, J) value of each token feature (Ls = Lt = 1 model, state j + 1)."""
    emit, null = featurize_states(src.split(), tgt.split(), max_src_len=1, max_tgt_len=1)
    names = feature_names(max_src_len=1, max_tgt_len=1)
    assert emit.shape == (len(src.split()), 1, 1 + len(tgt.split()), len(names))
    assert not emit[:, :, 0].any()  # the NULL state column carries no span features
    return {n: emit[:, 0, 1:, k].float() for k, n in enumerate(names)}, null


def test_identity_case_position_and_context():
    f, null = _token("The cat sat", "the cat sat")
    # "The"/"the": not identical, identical lower-cased; "cat"/"cat": identical
    assert f["sum_identical"].tolist() == [[0, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert f["sum_lower_identical"].tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    # stopword_identical only for the/the ("the" is a stopword); content_identical for the rest
    assert f["sum_stopword_identical"].tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert f["sum_content_identical"].tolist() == [[0, 0, 0], [0, 1, 0], [0, 0, 1]]
    # relative position 1 - |(i + 1/2)/I - (j + 1/2)/J| with I = J = 3
    for i in range(3):
        for j in range(3):
            assert f["sum_rel_position"][i, j] == _half(1 - abs(i - j) / 3)
    # context: left neighbours lower-identical (i-1, j-1), right neighbours (i+1, j+1)
    assert f["sum_ctx_left_identical"].tolist() == [[0, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert f["sum_ctx_right_identical"].tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 0]]
    # token model: the 1x1 block's "sum" and "min" columns are both the token value
    assert torch.equal(f["min_lower_identical"], f["sum_lower_identical"])
    # NULL features of source token i: bias, stopword, punct, has an identical, best dice
    assert null[:, :5].tolist() == [[1, 1, 0, 1, 1], [1, 0, 0, 1, 1], [1, 0, 0, 1, 1]]


def test_edit_distance_dice_prefix_substring():
    f, _ = _token("color", "colour")
    # Levenshtein(color, colour) = 1 (insert u); similarity 1 - 1/max(5, 6) = 5/6
    assert f["sum_edit_sim"][0, 0] == _half(5 / 6)
    # trigrams of #color#: #co col olo lor or# (5); of #colour#: #co col olo lou our ur# (6);
    # shared #co col olo (3): Dice 2*3/(5+6) = 6/11
    assert f["sum_trigram_dice"][0, 0] == _half(6 / 11)
    assert f["sum_prefix4"][0, 0] == 1  # "colo" == "colo"
    assert f["sum_substring"][0, 0] == 0  # neither contains the other
    assert f["sum_identical"][0, 0] == 0 and f["sum_lower_identical"][0, 0] == 0
    g, _ = _token("walk", "walking")
    # Levenshtein = 3 (insert i n g): 1 - 3/7 = 4/7; "walk" is a substring of "walking";
    # trigrams #wa wal alk lk# (4) vs #wa wal alk lki kin ing ng# (7), shared 3: 6/11
    assert g["sum_edit_sim"][0, 0] == _half(4 / 7)
    assert g["sum_substring"][0, 0] == 1 and g["sum_prefix4"][0, 0] == 1
    assert g["sum_trigram_dice"][0, 0] == _half(6 / 11)


def test_numbers_and_punctuation():
    f, null = _token("1,200 .", "1200 .")
    assert f["sum_number_match"].tolist() == [[1, 0], [0, 0]]  # 1,200 == 1200
    assert f["sum_punct_identical"].tolist() == [[0, 0], [0, 1]]
    assert null[1, 2] == 1 and null[0, 2] == 0  # the NULL punctuation flag


@needs_wordnet
def test_wordnet_synonym():
    # car.n.01 = {car, auto, automobile, machine, motorcar}: "car" and "automobile" share it;
    # "car" and "banana" share no synset
    f, null = _token("car banana", "automobile")
    assert f["sum_wn_synonym"].tolist() == [[1], [0]]
    assert f["sum_identical"].tolist() == [[0], [0]]
    assert null[:, 5].tolist() == [1, 0]  # NULL feature: best WordNet match of the token


def test_phrase_block_rule():
    """Yao et al. 3.4: a block's value = (sum over its source tokens of their best match in
    the target phrase + sum over its target tokens of their best match in the source
    phrase) / 2; the "min" column = weakest best match x max(ls, lt); a shape indicator;
    joined-phrase identity x max(ls, lt)."""
    src, tgt = "New York".split(), "new york".split()
    emit, _ = featurize_states(src, tgt, max_src_len=2, max_tgt_len=2)
    names = feature_names(max_src_len=2, max_tgt_len=2)
    block = emit[0, 1, state_id(end=2, length=2, tgt_len=2, max_tgt_len=2)].float()
    v = dict(zip(names, block.tolist()))
    # lower-identity: every token's best match is 1: (1 + 1 + 1 + 1) / 2 = 2; min 1 x 2 = 2
    assert v["sum_lower_identical"] == 2 and v["min_lower_identical"] == 2
    assert v["sum_identical"] == 0  # case differs in both tokens
    assert v["shape_2x2"] == 1 and v["shape_1x2"] == 0 and v["shape_2x1"] == 0
    assert v["phrase_lower_identical"] == 2  # "new_york" == "new_york", times max(2, 2)
    # the 2x1 block New York -> "york": source best matches 0 (New) and 1 (York), target
    # best match 1: (0 + 1 + 1) / 2 = 1; min(0, 1, 1) x 2 = 0
    v21 = dict(zip(names, emit[0, 1, state_id(end=2, length=1, tgt_len=2,
                                              max_tgt_len=2)].float().tolist()))
    assert v21["sum_lower_identical"] == 1 and v21["min_lower_identical"] == 0
    assert v21["shape_2x1"] == 1 and v21["phrase_lower_identical"] == 0
