"""String-similarity features vs hand-worked values; span features vs brute force."""

import itertools

import pytest
import torch

from aligners.features.monolingual import (
    NULL_FEATURES,
    TOKEN_FEATURES,
    _token_matrix,
    feature_names,
    featurize_states,
)
from aligners.features.string_sim import (
    TOKEN_PAIR_FEATURES,
    _dice,
    _ngrams,
    crude_stem,
    edit_similarity,
    normalise_number,
    word_pair_features,
)


def span_features(src, tgt, *, max_src_len=3, max_tgt_len=3, phrase_cues=False):
    """The block features in the layout the tests read: span (I, Ls, J, Lt, F) float32, the
    source segment [s, s+ls) against the target phrase of length lt ENDING at e (zero outside
    the sentences), and null (I, F0): `featurize_states`' blocks (float32) read back from
    their places in its state order (lt = 1: columns 1..J; lt > 1: the (J, Lt - 1) tail)."""
    I, J, Ls, Lt = len(src), len(tgt), max_src_len, max_tgt_len
    emit, null = featurize_states(src, tgt, max_src_len=Ls, max_tgt_len=Lt,
                                  phrase_cues=phrase_cues, dtype=torch.float32)
    span = torch.zeros(I, Ls, J, Lt, emit.shape[-1])
    for ls, lt in itertools.product(range(1, min(Ls, I) + 1), range(1, min(Lt, J) + 1)):
        rows = emit[: I - ls + 1, ls - 1]
        block = rows[:, 1: J + 1] if lt == 1 else rows[:, J + 1:].unflatten(1, (J, Lt - 1))[
            :, lt - 1:, lt - 2]
        span[: I - ls + 1, ls - 1, lt - 1:, lt - 1] = block
    return span, null


def test_edit_similarity_hand_values():
    assert edit_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert edit_similarity("abc", "abc") == 1.0
    assert edit_similarity("", "ab") == 0.0
    assert edit_similarity("ab", "ba") == 0.0  # two substitutions / 2


def ngram_dice(a, b):
    """Dice coefficient of the padded character trigram sets (the trigram_dice column)."""
    return _dice(_ngrams(a), _ngrams(b))


def test_ngram_dice_hand_values():
    # "#ab#" -> {#ab, ab#}; "#ac#" -> {#ac, ac#}: no overlap
    assert ngram_dice("ab", "ac") == 0.0
    # "#abc#": {#ab, abc, bc#}; "#abd#": {#ab, abd, bd#} -> 2*1/6
    assert ngram_dice("abc", "abd") == pytest.approx(1 / 3)
    assert ngram_dice("same", "same") == 1.0


def test_number_and_stem_normalisation():
    assert normalise_number("1,200") == "1200"
    assert normalise_number("three") == "3"
    assert normalise_number("15th") == "15"
    assert normalise_number("house") is None
    assert crude_stem("Walking") == crude_stem("walked") == "walk"


def test_word_pair_features_columns():
    f = dict(zip(TOKEN_PAIR_FEATURES, word_pair_features("The", "the")))
    assert f["identical"] == 0 and f["lower_identical"] == 1 and f["stopword_identical"] == 1
    assert f["content_identical"] == 0
    f = dict(zip(TOKEN_PAIR_FEATURES, word_pair_features("1,200", "1200")))
    assert f["number_match"] == 1 and f["lower_identical"] == 0
    f = dict(zip(TOKEN_PAIR_FEATURES, word_pair_features("Paris", "Paris")))
    assert f["content_identical"] == 1 and f["identical"] == 1


def _brute_span(X, s, ls, e, lt, f):
    """Sum-of-best-matches / 2 and weakest link * max len for one block, by loops."""
    rows = range(s, s + ls)
    cols = range(e - lt + 1, e + 1)
    src_best = [max(float(X[i, j, f]) for j in cols) for i in rows]
    tgt_best = [max(float(X[i, j, f]) for i in rows) for j in cols]
    return (sum(src_best) + sum(tgt_best)) / 2, min(src_best + tgt_best) * max(ls, lt)


def test_span_features_match_brute_force_and_token_slice():
    src = "Shops are closed up for now until March".split()
    tgt = "Shops are temporarily closed down".split()
    span, null = span_features(src, tgt, max_src_len=3, max_tgt_len=2)
    X = _token_matrix(src, tgt, None)
    Ft = len(TOKEN_FEATURES)
    names = feature_names(max_src_len=3, max_tgt_len=2)
    assert span.shape == (8, 3, 5, 2, len(names))
    assert null.shape == (8, len(NULL_FEATURES))
    # the 1x1 slice is the token matrix (same features for the token model)
    assert torch.allclose(span[:, 0, :, 0, :Ft], X)
    assert torch.allclose(span[:, 0, :, 0, Ft: 2 * Ft], X)
    for s, ls, e, lt in itertools.product(range(8), (1, 2, 3), range(5), (1, 2)):
        if s + ls > 8 or e - lt + 1 < 0:
            assert span[s, ls - 1, e, lt - 1].abs().sum() == 0
            continue
        for f in (1, 3, 4):
            a, b = _brute_span(X, s, ls, e, lt, f)
            assert float(span[s, ls - 1, e, lt - 1, f]) == pytest.approx(a, abs=1e-5)
            assert float(span[s, ls - 1, e, lt - 1, Ft + f]) == pytest.approx(b, abs=1e-5)
    # paper 3.4: "closed up" / "closed down" identity is upweighted to 1.0
    lower = TOKEN_FEATURES.index("lower_identical")
    assert float(span[2, 1, 4, 1, lower]) == pytest.approx(1.0)
    shape = names.index("shape_2x2")
    assert float(span[2, 1, 4, 1, shape]) == 1.0
    assert float(span[2, 0, 3, 0, shape]) == 0.0


def test_phrase_cues_only_on_multi_token_blocks():
    src = "the UK , said".split()
    tgt = "the UK said".split()
    base, _ = span_features(src, tgt, max_src_len=2, max_tgt_len=2)
    cues, _ = span_features(src, tgt, max_src_len=2, max_tgt_len=2, phrase_cues=True)
    names = feature_names(max_src_len=2, max_tgt_len=2, phrase_cues=True)
    n0 = base.shape[-1]
    assert torch.equal(cues[..., :n0], base)  # the default columns are unchanged
    col = {n: names.index(n) for n in ("cue_punct", "cue_stop_start", "cue_same_order",
                                       "cue_capitalised", "cue_stop_end")}
    assert cues[:, 0, :, 0, n0:].abs().sum() == 0  # nothing on 1x1 blocks
    blk = cues[0, 1, 1, 1]  # "the UK" / "the UK" (target phrase ending at 1)
    assert blk[col["cue_same_order"]] == 1 and blk[col["cue_stop_start"]] == 1
    assert blk[col["cue_punct"]] == 0 and blk[col["cue_capitalised"]] == 0
    assert cues[1, 1, 1, 1, col["cue_punct"]] == 1  # "UK ," contains punctuation
    assert cues[2, 1, 2, 1, col["cue_stop_end"]] == 0  # ", said" / "UK said"


def _levenshtein_dp(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_bit_parallel_levenshtein_equals_the_dp():
    import random

    from aligners.features.string_sim import levenshtein
    rng = random.Random(0)
    words = ["", "a", "ab", "ba", "kitten", "sitting", "flaw", "lawn", "aaaa", "aaab",
             "intention", "execution", "ünïcode", "unicode"]
    pairs = [(a, b) for a in words for b in words]
    for _ in range(2000):
        alpha = "abc" if rng.random() < 0.5 else "abcdefghijklmnopqrstuvwxyz"
        pairs.append(("".join(rng.choice(alpha) for _ in range(rng.randint(0, 12))),
                      "".join(rng.choice(alpha) for _ in range(rng.randint(0, 70)))))
    for a, b in pairs:
        assert levenshtein(a, b) == _levenshtein_dp(a, b) == levenshtein(b, a), (a, b)


def test_memoised_trigram_dice_equals_the_set_formula():
    """`word_pair_features` takes the trigram Dice from per-word memoised sets: the same value
    as the direct formula (2 |A & B| / (|A| + |B|) over padded trigram sets), bit for bit."""
    import random

    from aligners.features.string_sim import clear_caches

    def direct(a, b):
        ga = {f"#{a}#"[i: i + 3] for i in range(len(a))}
        gb = {f"#{b}#"[i: i + 3] for i in range(len(b))}
        return 0.0 if not ga or not gb else 2 * len(ga & gb) / (len(ga) + len(gb))

    rng = random.Random(1)
    words = ["cat", "cats", "a", "ab", "Sitting", "sitting", "kitten", "house", "houses"]
    words += ["".join(rng.choice("abcde") for _ in range(rng.randint(1, 9)))
              for _ in range(60)]
    col = TOKEN_PAIR_FEATURES.index("trigram_dice")
    clear_caches()
    for a in words:
        for b in words:
            assert ngram_dice(a, b) == direct(a, b), (a, b)
            assert word_pair_features(a, b)[col] == direct(a.lower(), b.lower()), (a, b)
