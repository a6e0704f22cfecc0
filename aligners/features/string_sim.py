"""String-similarity features of one (source word, target word) pair, all in [0, 1].

Pure functions of the two strings (memoised), so a sentence pair costs I*J dict lookups once
the vocabulary has been seen. `TOKEN_PAIR_FEATURES` names the columns of `word_pair_features`.
"""

import re
from functools import lru_cache

from aligners.features.wordnet import RELATIONS, get_wordnet

__all__ = [
    "TOKEN_PAIR_FEATURES",
    "STOPWORDS",
    "word_pair_features",
    "clear_caches",
    "edit_similarity",
    "levenshtein",
    "normalise_number",
    "is_punct",
    "crude_stem",
]

STOPWORDS = frozenset(
    """a an the of to in on at by for with from and or but nor as is are was were be been being
    am do does did have has had will would shall should can could may might must that this these
    those it its he she they them his her their we us our you your i me my not no so than then
    there here which who whom whose what when where why how if 's ' `` '' -lrb- -rrb- """.split()
)
_NUM = re.compile(r"^[+-]?[\d.,/:]*\d[\d.,/:]*(st|nd|rd|th|s)?$")
_WORDNUM = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_PUNCT = re.compile(r"^[^\w]+$")

TOKEN_PAIR_FEATURES = (
    "identical", "lower_identical", "stem_identical", "edit_sim", "trigram_dice", "prefix4",
    "substring", "number_match", "punct_identical", "stopword_identical", "content_identical",
    *(f"wn_{r}" for r in RELATIONS),
)


def is_punct(word: str) -> bool:
    return bool(_PUNCT.match(word))


def normalise_number(word: str) -> str | None:
    """'1,200' -> '1200', 'three' -> '3', '15th' -> '15'; None if not a number."""
    w = word.lower()
    if w in _WORDNUM:
        return _WORDNUM[w]
    if not _NUM.match(w):
        return None
    w = re.sub(r"(st|nd|rd|th|s)$", "", w).replace(",", "")
    return w.rstrip(".") or None


def crude_stem(word: str) -> str:
    """Lower-cased word with one common English suffix stripped (stem-identity feature)."""
    w = word.lower()
    for suf in ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly",
                "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def levenshtein(a: str, b: str) -> int:
    """Levenshtein distance by Myers' (1999) bit-parallel algorithm (Hyyro's formulation):
    one bit per character of `b` in Python ints, O(len(a)) big-int steps (the per-character
    bit masks of `b` are memoised per string)."""
    m = len(b)
    if m == 0:
        return len(a)
    peq = _peq(b)
    full, top = (1 << m) - 1, 1 << (m - 1)
    pv, mv, score = full, 0, m
    for c in a:
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = (ph << 1) | 1
        mh <<= 1
        pv = (mh | ~(xv | ph)) & full
        mv = ph & xv & full
    return score


@lru_cache(maxsize=200_000)
def _peq(b: str) -> dict[str, int]:
    """Character -> bit mask of its positions in `b` (Myers' pattern table; read-only)."""
    peq: dict[str, int] = {}
    for i, c in enumerate(b):
        peq[c] = peq.get(c, 0) | (1 << i)
    return peq


def edit_similarity(a: str, b: str) -> float:
    """1 - Levenshtein(a, b) / max(len): 1.0 for equal strings. O(len(a)) big-int steps."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return 1.0 - levenshtein(a, b) / max(len(a), len(b))


def _ngrams(word: str, n: int = 3) -> frozenset[str]:
    """The padded character n-gram set of `word` (`#word#`)."""
    return frozenset(f"#{word}#"[i: i + n] for i in range(len(word) + 3 - n))


def _dice(ga: frozenset[str], gb: frozenset[str]) -> float:
    """Dice coefficient of two n-gram sets (0 when one is empty)."""
    if not ga or not gb:
        return 0.0
    return 2 * len(ga & gb) / (len(ga) + len(gb))


@lru_cache(maxsize=200_000)
def _word_info(word: str) -> tuple:
    """Per-word values of `word_pair_features` (memoised per word type): lower-cased form,
    punctuation flag, normalised number, lemma set, stopword flag, trigram set of the
    lower-cased form."""
    wn = get_wordnet()
    low = word.lower()
    lemmas = frozenset({b for b, _ in wn.base_forms(word)} | {crude_stem(word)})
    return low, is_punct(word), normalise_number(word), lemmas, low in STOPWORDS, _ngrams(low)


@lru_cache(maxsize=1_000_000)
def word_pair_features(a: str, b: str) -> tuple[float, ...]:
    """Column values of TOKEN_PAIR_FEATURES for source word `a`, target word `b`
    (memoised per word-type pair; per-word parts memoised per word type)."""
    la, pa, na, lem_a, stop_a, tri_a = _word_info(a)
    lb, pb, nb, lem_b, stop_b, tri_b = _word_info(b)
    low = la == lb
    stem = low or bool(lem_a & lem_b)
    edit = edit_similarity(la, lb) if not (pa or pb) else float(low)
    dice = _dice(tri_a, tri_b) if not (pa or pb) else float(low)
    prefix = float(len(la) >= 4 and len(lb) >= 4 and la[:4] == lb[:4])
    substring = float(min(len(la), len(lb)) >= 4 and (la in lb or lb in la))
    content = low and not (pa or stop_a)
    no_wn = pa or pb or stop_a or stop_b or na or nb  # punctuation, function words, numbers
    rels = (0.0,) * len(RELATIONS) if no_wn else tuple(map(float, get_wordnet().relations(la, lb)))
    return (
        float(a == b), float(low), float(stem), edit, dice, prefix, substring,
        float(na is not None and na == nb), float(low and pa), float(low and stop_a),
        float(content), *rels,
    )


def clear_caches() -> None:
    """Forget every memoised word / word-pair / WordNet look-up (cold-start timings, tests)."""
    word_pair_features.cache_clear()
    _word_info.cache_clear()
    _peq.cache_clear()
    type(get_wordnet()).cache_clear()
