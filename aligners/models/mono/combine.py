"""Both directions of a monolingual aligner combined into one source-target link set.

Shapes: a link set is a set of (i, j) pairs (source word i, target word j, 0-based); a link
posterior matrix is (I, J) float64 in source-target order (`MonoAligner.posteriors`).
`combine` (`COMBINES`):
- `none`: one direction decodes (unchanged behaviour);
- `union` / `intersect`: the set union / intersection of the two directions' links (each
  direction decoded with `decode` / `threshold`: Viterbi or its own posterior threshold);
- `grow-diag`: Koehn et al.'s symmetrisation without the final step: start from the
  intersection and add union links next to a kept link (the 8 neighbours, diagonals included)
  while the new link's source or target word is still unlinked, until nothing changes;
- `posterior`: the mean of the two directions' link posteriors, links where it exceeds
  `threshold` (the directions' `decode` is not used).
Output per pair, as `MonoAligner.align`: (blocks, sorted links, score). Blocks of a set
combination are the two directions' blocks whose every link is in the combined set, plus a
1x1 block for each link no kept block covers; its score is the mean of the two directions'
normalised scores. A posterior combination has 1x1 blocks and the score = the summed mean
posteriors of its links / I (expected correct output links per source word).
Cost: two decodes (or two posterior passes) of `MonoAligner.align`, plus O(I * J) per pair
here (grow-diag: O(|union| * 8) per pass, at most |union| passes).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import torch

from aligners.errors import AlignersInputError
from aligners.models.mono.config import COMBINES

__all__ = ["COMBINES", "check_combine", "grow_diag", "combine_links", "posterior_output",
           "combined_blocks", "combined_output"]

_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))

Link = tuple[int, int]


def check_combine(combine: str, directions: Iterable[str] | None = None) -> str:
    """`combine` if it is one of `COMBINES` (and, given the model's `directions`, the model
    has both s2t and t2s for any combine other than none); else AlignersInputError."""
    if combine not in COMBINES:
        raise AlignersInputError(f"combine must be one of {list(COMBINES)}, got {combine!r}")
    if directions is not None and combine != "none" and sorted(directions) != ["s2t", "t2s"]:
        raise AlignersInputError(f"combine={combine!r} needs a model trained in both "
                                 f"directions (training.directions=[s2t,t2s]); this one "
                                 f"has {list(directions)}")
    return combine


def grow_diag(a: set[Link], b: set[Link]) -> set[Link]:
    """Grow-diag symmetrisation of two link sets (both source-target order): the
    intersection plus union links adjacent (diagonals included) to a kept link whose source
    or target word is not yet linked, repeated until no link is added. Deterministic:
    kept links are visited in sorted order. O(|a | b| * 8) per pass."""
    union = a | b
    kept = set(a & b)
    src = {i for i, _ in kept}
    tgt = {j for _, j in kept}
    added = True
    while added:
        added = False
        for i, j in sorted(kept):
            for di, dj in _NEIGHBOURS:
                n = (i + di, j + dj)
                if n in union and n not in kept and (n[0] not in src or n[1] not in tgt):
                    kept.add(n)
                    src.add(n[0])
                    tgt.add(n[1])
                    added = True
    return kept


def combine_links(s2t: set[Link], t2s: set[Link], combine: str) -> set[Link]:
    """The combined link set of two directions' links (source-target order) for `combine`
    in union | intersect | grow-diag."""
    if combine not in _SET_COMBINES:
        raise AlignersInputError(f"combine_links takes union, intersect or grow-diag, "
                                 f"got {combine!r}")
    return _SET_COMBINES[combine](set(s2t), set(t2s))


_SET_COMBINES = {"union": operator.or_, "intersect": operator.and_, "grow-diag": grow_diag}


def posterior_output(mean: torch.Tensor, threshold: float):
    """One pair's output from an (I, J) mean link-posterior matrix: (1x1 blocks, the sorted
    links whose mean exceeds `threshold`, the summed kept means / I)."""
    keep = mean > threshold
    links = sorted((i, j) for i, j in keep.nonzero().tolist())
    return ([(i, 1, j, 1) for i, j in links], links,
            float(mean[keep].sum()) / max(mean.shape[0], 1))


def combined_blocks(links: set[Link], *block_lists) -> list[tuple[int, int, int, int]]:
    """Blocks (src_start, src_len, tgt_start, tgt_len) of the given lists whose every link is
    in `links` (deduplicated), plus a 1x1 block per link none of them covers; sorted."""
    kept, covered = set(), set()
    for blocks in block_lists:
        for s, k, t, lt in blocks:
            cells = {(i, j) for i in range(s, s + k) for j in range(t, t + lt)}
            if cells <= links:
                kept.add((s, k, t, lt))
                covered |= cells
    kept |= {(i, 1, j, 1) for i, j in links - covered}
    return sorted(kept)


def combined_output(s2t, t2s, combine: str):
    """One pair's output (blocks, sorted links, score) from its two directions' outputs of
    `MonoAligner.align` combined by `combine` (union | intersect | grow-diag; see above)."""
    links = combine_links(s2t[1], t2s[1], combine)
    return combined_blocks(links, s2t[0], t2s[0]), sorted(links), (s2t[2] + t2s[2]) / 2
