"""Symmetrization of two directional word alignments, with exactly fast_align `atools` semantics.

Both inputs are in source-target order (Pharaoh `i-j`, the forward alignment from aligning
source->target and the reverse one from target->source, written back as source-target).
Heuristics, named as in atools / Moses:

- ``intersect``: F ∩ R.
- ``union``: F ∪ R.
- ``grow-diag``: start from F ∩ R; repeatedly sweep the not-yet-added points of F ∪ R in
  (i, j) order and add a point when its source word i or its target word j is still
  unaligned and one of its 8 neighbours (horizontal, vertical, diagonal) is already in the
  result. Points added during a sweep count immediately for later points in the same
  sweep; sweeps repeat until one adds nothing (this is atools' order, which can differ
  from Koehn's original pseudo-code on a few links).
- ``grow-diag-final``: grow-diag, then for each point of F in (i, j) order and then each
  point of R, add it when i or j is unaligned.
- ``grow-diag-final-and``: as grow-diag-final, but i AND j must both be unaligned.

Shapes: a sentence alignment is a set of `(i, j)` links, `i` a source index (< I) and `j` a
target index (< J). Cost per sentence: O(U log U + sweeps * U) for U = |F ∪ R| links
(sweeps <= U, typically 2-3); memory O(U). A 200k-line corpus takes a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["HEURISTICS", "check_heuristic", "symmetrize", "symmetrize_corpus"]

HEURISTICS: tuple[str, ...] = ("intersect", "union", "grow-diag", "grow-diag-final",
                               "grow-diag-final-and")

Link = tuple[int, int]


def check_heuristic(heuristic: str) -> str:
    """`heuristic` if it is one of HEURISTICS, else ValueError naming it."""
    if heuristic not in HEURISTICS:
        raise ValueError(f"unknown heuristic {heuristic!r}; choose one of {', '.join(HEURISTICS)}")
    return heuristic


def _grow_diag(inter: set[Link], candidates: list[Link]) -> tuple[set[Link], set[int], set[int]]:
    """atools' `Grow(KoehnAligned, non-idempotent, union)` from the intersection.

    `candidates` are the points of F ∪ R not in F ∩ R, sorted by (i, j).
    Returns the grown alignment and its sets of aligned source / target indices.
    """
    res = set(inter)
    src_aligned = {i for i, _ in res}
    tgt_aligned = {j for _, j in res}
    pending = candidates
    while pending:
        rest: list[Link] = []
        for link in pending:
            i, j = link
            if (i not in src_aligned or j not in tgt_aligned) and (  # a neighbour is in
                    (i - 1, j) in res or (i + 1, j) in res or (i, j - 1) in res
                    or (i, j + 1) in res or (i - 1, j - 1) in res or (i + 1, j + 1) in res
                    or (i - 1, j + 1) in res or (i + 1, j - 1) in res):
                res.add(link)
                src_aligned.add(i)
                tgt_aligned.add(j)
            else:
                rest.append(link)
        if len(rest) == len(pending):  # nothing added
            break
        pending = rest
    return res, src_aligned, tgt_aligned


def _final(res: set[Link], src_aligned: set[int], tgt_aligned: set[int],
           points: Iterable[Link], *, both_unaligned: bool) -> None:
    """atools' idempotent `Grow(IsOneOrBothUnaligned | IsNeitherAligned, adds)`, in place."""
    for link in sorted(points):
        if link in res:
            continue
        i, j = link
        free_i, free_j = i not in src_aligned, j not in tgt_aligned
        if (free_i and free_j) if both_unaligned else (free_i or free_j):
            res.add(link)
            src_aligned.add(i)
            tgt_aligned.add(j)


def _links(x) -> set[Link]:
    """An `Alignment` (all its links) or an iterable of `(i, j)` -> a set of links."""
    return set(x.possible) if hasattr(x, "possible") else set(x)


def symmetrize(fwd: Iterable[Link], rev: Iterable[Link], heuristic: str) -> set[Link]:
    """Symmetrize one sentence pair's forward and reverse links (both source-target).

    `fwd`, `rev`: iterables of `(i, j)` 0-based links (or `Alignment`s: all their links).
    Returns the set of links. Cost: see the module docstring. Raises `ValueError` for an
    unknown heuristic.
    """
    f, r = _links(fwd), _links(rev)
    if check_heuristic(heuristic) in ("intersect", "union"):
        return f & r if heuristic == "intersect" else f | r
    inter = f & r
    res, src_aligned, tgt_aligned = _grow_diag(inter, sorted((f | r) - inter))
    if heuristic != "grow-diag":
        both = heuristic == "grow-diag-final-and"
        _final(res, src_aligned, tgt_aligned, f, both_unaligned=both)
        _final(res, src_aligned, tgt_aligned, r, both_unaligned=both)
    return res


def symmetrize_corpus(fwd: Sequence[Iterable[Link]], rev: Sequence[Iterable[Link]],
                      heuristic: str) -> list[set[Link]]:
    """`symmetrize` line by line; `fwd` and `rev` must have the same number of sentences.

    Shapes: N sentences in, N link sets out. Cost: O(total links) (see module docstring).
    """
    if len(fwd) != len(rev):
        raise ValueError(f"forward and reverse alignments have different numbers of lines "
                         f"({len(fwd)} vs {len(rev)})")
    check_heuristic(heuristic)
    return [symmetrize(f, r, heuristic) for f, r in zip(fwd, rev)]
