"""aligners.symmetrize against fast_align atools' own outputs, plus hand-worked cases."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aligners.symmetrize import HEURISTICS, symmetrize, symmetrize_corpus
from tests.conftest import shared_path

ORACLE_INPUTS = ("eflomal.enfr", "eflomal.enfr3k", "fastalign.enfr")


def _read(path):
    with open(path, encoding="utf-8") as f:
        return [{tuple(map(int, tok.split("-"))) for tok in line.split()} for line in f]


@pytest.mark.parametrize("heuristic", HEURISTICS)
@pytest.mark.parametrize("name", ORACLE_INPUTS)
def test_matches_atools_every_line(name, heuristic):
    root = shared_path("oracles", "symmetrize")
    fwd, rev = _read(root / f"{name}.fwd"), _read(root / f"{name}.rev")
    expected = _read(root / f"{name}.{heuristic}")
    assert len(fwd) == len(rev) == len(expected)
    got = symmetrize_corpus(fwd, rev, heuristic)
    bad = [n + 1 for n, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert not bad, f"{len(bad)} lines differ from atools, first: {bad[:5]}"


def test_oracles_exercise_the_heuristics():
    # the oracle would not tell the heuristics apart if they agreed everywhere
    root = shared_path("oracles", "symmetrize")
    outs = {h: _read(root / f"eflomal.enfr3k.{h}") for h in HEURISTICS}
    for a in HEURISTICS:
        for b in HEURISTICS:
            if a < b:
                assert outs[a] != outs[b], (a, b)


F = {(0, 0), (1, 1), (2, 1)}
R = {(0, 0), (1, 2), (3, 3)}


@pytest.mark.parametrize(
    "heuristic, expected",
    [
        ("intersect", {(0, 0)}),
        ("union", {(0, 0), (1, 1), (2, 1), (1, 2), (3, 3)}),
        # grow from (0,0): (1,1) diag neighbour, then (1,2) (target 2 unaligned, next to
        # (1,1)) and (2,1) (source 2 unaligned, next to (1,1)); (3,3) touches nothing.
        ("grow-diag", {(0, 0), (1, 1), (1, 2), (2, 1)}),
        ("grow-diag-final", {(0, 0), (1, 1), (1, 2), (2, 1), (3, 3)}),
        ("grow-diag-final-and", {(0, 0), (1, 1), (1, 2), (2, 1), (3, 3)}),
    ],
)
def test_hand_worked(heuristic, expected):
    assert symmetrize(F, R, heuristic) == expected


def test_points_added_in_a_sweep_count_at_once_in_sorted_order():
    # (0,1) then (1,0) are added first in the sweep; by the time (1,1) is visited both its
    # words are aligned, so atools never adds it (not even in the final steps).
    fwd = {(0, 0), (0, 1), (1, 1)}
    rev = {(0, 0), (1, 0)}
    assert symmetrize(fwd, rev, "grow-diag") == {(0, 0), (0, 1), (1, 0)}
    assert symmetrize(fwd, rev, "grow-diag-final") == {(0, 0), (0, 1), (1, 0)}


def test_later_sweeps_reach_points_that_become_adjacent():
    # (0,0) has no aligned neighbour in the first sweep; (1,1) is added next to (2,2);
    # the second sweep then adds (0,0).
    fwd = {(0, 0), (1, 1), (2, 2)}
    rev = {(2, 2)}
    assert symmetrize(fwd, rev, "grow-diag") == {(0, 0), (1, 1), (2, 2)}


def test_final_and_needs_both_words_unaligned():
    # (1,5) has no neighbour in the grid grown from (0,0); source 1 is unaligned but
    # target 5 is taken by (4,5) from the intersection.
    fwd = {(0, 0), (4, 5), (1, 5)}
    rev = {(0, 0), (4, 5)}
    assert symmetrize(fwd, rev, "grow-diag") == {(0, 0), (4, 5)}
    assert symmetrize(fwd, rev, "grow-diag-final") == {(0, 0), (4, 5), (1, 5)}
    assert symmetrize(fwd, rev, "grow-diag-final-and") == {(0, 0), (4, 5)}


def test_empty_lines_and_errors():
    assert symmetrize(set(), set(), "grow-diag-final-and") == set()
    assert symmetrize_corpus([set(), {(0, 0)}], [set(), set()], "union") == [set(), {(0, 0)}]
    with pytest.raises(ValueError, match="unknown heuristic"):
        symmetrize(F, R, "grow")
    with pytest.raises(ValueError, match="different numbers of lines"):
        symmetrize_corpus([F], [R, R], "union")


small_links = st.sets(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=14)


@settings(max_examples=200, deadline=None)
@given(small_links, small_links)
def test_heuristics_nest(fwd, rev):
    out = {h: symmetrize(fwd, rev, h) for h in HEURISTICS}
    assert out["intersect"] == fwd & rev and out["union"] == fwd | rev
    assert out["intersect"] <= out["grow-diag"]
    for final in ("grow-diag-final", "grow-diag-final-and"):
        assert out["grow-diag"] <= out[final] <= out["union"]
    # every word aligned in F or R stays aligned after grow-diag-final
    aligned_src = {i for i, _ in fwd | rev}
    assert {i for i, _ in out["grow-diag-final"]} == aligned_src


def test_accepts_alignments():
    from aligners.data.types import Alignment

    got = symmetrize_corpus([Alignment(frozenset(F))], [Alignment(frozenset(R))], "grow-diag")
    assert got == [symmetrize(F, R, "grow-diag")]
