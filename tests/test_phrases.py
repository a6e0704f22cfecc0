"""Phrase extraction and orientation classes on hand-made alignments (Moses conventions)."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aligners.errors import AlignersInputError
from aligners.phrases import (
    ORIENTATIONS,
    extract_phrase_pairs,
    format_extract_line,
    iter_extract,
)


def _table(src, tgt, links, mode="wbe", max_length=7):
    pairs = extract_phrase_pairs(
        links, src_len=len(src), tgt_len=len(tgt), max_length=max_length, mode=mode
    )
    return {
        (" ".join(src[p.src_start:p.src_end]), " ".join(tgt[p.tgt_start:p.tgt_end])): (
            ORIENTATIONS[p.backward],
            ORIENTATIONS[p.forward],
        )
        for p in pairs
    }


def test_monotone_diagonal_all_mono():
    src, tgt = "a b c".split(), "x y z".split()
    table = _table(src, tgt, [(0, 0), (1, 1), (2, 2)])
    assert len(table) == 6  # every contiguous span
    assert set(table.values()) == {("mono", "mono")}


def test_swap_and_sentence_boundaries():
    src, tgt = "a b".split(), "x y".split()
    table = _table(src, tgt, [(0, 1), (1, 0)])
    assert table == {
        ("b", "x"): ("other", "swap"),  # sentence start is aligned to source start only
        ("a b", "x y"): ("mono", "mono"),
        ("a", "y"): ("swap", "other"),
    }


def test_unaligned_source_word_extends_phrases_and_phrase_mode_differs():
    src, tgt = "a b c".split(), "x y".split()
    links = [(0, 0), (2, 1)]  # b unaligned
    wbe = _table(src, tgt, links)
    assert set(wbe) == {("a", "x"), ("a b", "x"), ("a b c", "x y"), ("c", "y"), ("b c", "y")}
    assert wbe[("b c", "y")][0] == "mono"  # previous target word x <- a, just left of "b c"
    assert wbe[("c", "y")][0] == "other"  # the word left of "c" (b) is unaligned
    phrase = _table(src, tgt, links, mode="phrase")
    assert phrase[("c", "y")][0] == "mono"  # block "a b ||| x" ends right before "c"


def test_unaligned_target_word_is_covered_by_target_spans():
    src, tgt = "a b".split(), "x y z".split()
    table = _table(src, tgt, [(0, 0), (1, 2)])  # y unaligned
    assert set(table) == {("a", "x"), ("a", "x y"), ("a b", "x y z"), ("b", "y z"), ("b", "z")}
    assert table[("b", "z")][0] == "other"  # y (previous target word) is unaligned


def test_consistency_rule_rejects_crossing_links():
    src, tgt = "a b".split(), "x y".split()
    table = _table(src, tgt, [(0, 0), (0, 1), (1, 1)])
    assert set(table) == {("a b", "x y")}


def test_hierarchical_uses_blocks_longer_than_the_limit():
    src, tgt = "a b c".split(), "x y z".split()
    links = [(1, 0), (2, 1), (0, 2)]  # x<-b, y<-c, z<-a
    assert _table(src, tgt, links, mode="wbe", max_length=1)[("a", "z")][0] == "other"
    assert _table(src, tgt, links, mode="phrase", max_length=1)[("a", "z")][0] == "other"
    # "b c ||| x y" (length 2 > 1) is a block just right of "a": a swap for hier
    assert _table(src, tgt, links, mode="hier", max_length=1)[("a", "z")][0] == "swap"
    assert _table(src, tgt, links, mode="phrase", max_length=2)[("a", "z")][0] == "swap"


def test_max_length_limits_both_sides():
    links = [(i, i) for i in range(8)]
    for lim in (1, 3, 7):
        pairs = extract_phrase_pairs(links, src_len=8, tgt_len=8, max_length=lim)
        assert all(p.src_end - p.src_start <= lim and p.tgt_end - p.tgt_start <= lim for p in pairs)
        assert len(pairs) == sum(8 - n + 1 for n in range(1, lim + 1))


def test_extract_line_format():
    src, tgt = "the house".split(), "la maison".split()
    links = [(0, 0), (1, 1)]
    pairs = extract_phrase_pairs(links, src_len=2, tgt_len=2)
    lines = [format_extract_line(src, tgt, p, links) for p in pairs]
    assert lines == [
        "the ||| la ||| 0-0 ||| mono",
        "the house ||| la maison ||| 0-0 1-1 ||| mono",
        "house ||| maison ||| 0-0 ||| mono",
    ]
    both = format_extract_line(src, tgt, pairs[0], links, direction="both")
    assert both.endswith("||| mono mono")


def test_bad_input_raises():
    with pytest.raises(AlignersInputError):
        extract_phrase_pairs([(3, 0)], src_len=2, tgt_len=2)
    with pytest.raises(AlignersInputError):
        extract_phrase_pairs([], src_len=2, tgt_len=2, mode="nope")
    with pytest.raises(AlignersInputError, match="sentence pair 2"):
        list(iter_extract([(["a"], ["x"], [(0, 0)]), (["a"], ["x"], [(0, 5)])]))


def _brute_force(links, n_src, n_tgt, lim):
    out = set()
    for i1, i2, j1, j2 in itertools.product(range(n_src), range(n_src), range(n_tgt), range(n_tgt)):
        if i2 < i1 or j2 < j1 or i2 - i1 >= lim or j2 - j1 >= lim:
            continue
        inside = [(i, j) for i, j in links if i1 <= i <= i2 and j1 <= j <= j2]
        crossing = [
            (i, j) for i, j in links if (i1 <= i <= i2) != (j1 <= j <= j2)
        ]
        if inside and not crossing:
            out.add((i1, i2 + 1, j1, j2 + 1))
    return out


def _word_orientation(links, p, n_src, n_tgt):
    def al(i, j):
        return (i == -1 and j == -1) or (i, j) in links

    left, right = al(p.src_start - 1, p.tgt_start - 1), al(p.src_end, p.tgt_start - 1)
    return 0 if left and not right else 1 if right and not left else 2


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.integers(1, 6),
            st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, 5)), max_size=10),
            st.integers(1, 4),
        )
    )
)
def test_extraction_equals_brute_force_consistency(args):
    n_src, n_tgt, links, lim = args
    links = {(i, j) for i, j in links if j < n_tgt}
    pairs = extract_phrase_pairs(links, src_len=n_src, tgt_len=n_tgt, max_length=lim)
    spans = [(p.src_start, p.src_end, p.tgt_start, p.tgt_end) for p in pairs]
    assert len(spans) == len(set(spans))
    assert set(spans) == _brute_force(links, n_src, n_tgt, lim)
    for p in pairs:
        assert p.backward == _word_orientation(links, p, n_src, n_tgt)
    # phrase/hier pairs are the same set; classes only move away from "other"
    for mode in ("phrase", "hier"):
        other = extract_phrase_pairs(links, src_len=n_src, tgt_len=n_tgt, max_length=lim, mode=mode)
        assert [q[:4] for q in other] == [q[:4] for q in pairs]
        for p, q in zip(pairs, other):
            assert p.backward == 2 or q.backward == p.backward
