"""Decoding word alignments of both directions: Viterbi, posterior thresholding, agreement.

Methods (every result is in source-target order, 0-based):
- "viterbi": each direction's best alignment (NULL links dropped);
- "posterior": each direction's links whose posterior exceeds `threshold`;
- "agreement": links whose product of the two directions' posteriors exceeds `threshold`
  (Liang et al. 2006); both directions get the same links.
Then `aligners.symmetrize` combines the two directions with any atools heuristic.

Layering: this module imports no model. It works on the tensors a model returns (Viterbi
links, posterior matrices, masks) and on the model and batch index objects passed in, which
only need the small interfaces `AlignsBatches` and `BatchIndex` below (the word aligner of
`aligners.models` and its pair index provide them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from aligners.errors import AlignersInputError

__all__ = ["DECODINGS", "Decoded", "AlignsBatches", "BatchIndex", "iter_decoded",
           "decode_corpus", "decode_lines", "combine"]


class AlignsBatches(Protocol):
    """What decoding needs from a word-alignment model: `keys` (a tensor on the model's
    device), `viterbi(batch) -> (fwd (B, J) source index or -1, rev (B, I) target index or
    -1)` and `posteriors(batch)` with `links_fwd`, `links_bwd` (B, I, J) link posteriors."""

    keys: torch.Tensor

    def viterbi(self, batch: Any) -> tuple[torch.Tensor, torch.Tensor]: ...

    def posteriors(self, batch: Any) -> Any: ...


class BatchIndex(Protocol):
    """A corpus in batches: `len()`, `n_sentences` and `batch(k)` with `.to(device)`,
    `rows (B,)` (input row of each batch row) and `mask (B, I, J)` bool."""

    n_sentences: int

    def __len__(self) -> int: ...

    def batch(self, k: int) -> Any: ...

DECODINGS = ("viterbi", "posterior", "agreement")

Link = tuple[int, int]


@dataclass
class Decoded:
    """Per sentence (input order): forward / reverse links and their posteriors.

    posteriors_fwd[n][(i, j)]: the forward model's p(a_j = i) (agreement: the product).
    """

    fwd: list[list[Link]]
    rev: list[list[Link]]
    posteriors_fwd: list[dict[Link, float]] = field(default_factory=list)
    posteriors_rev: list[dict[Link, float]] = field(default_factory=list)


def _group(n_rows: int, hits: torch.Tensor, values: torch.Tensor | None):
    """hits (K, 3) [b, i, j] -> links per batch row; values (K,) posteriors or None."""
    links: list[list[Link]] = [[] for _ in range(n_rows)]
    posts: list[dict[Link, float]] = [{} for _ in range(n_rows)]
    hl = hits.tolist()
    vl = values.tolist() if values is not None else None
    for k, (b, i, j) in enumerate(hl):
        links[b].append((i, j))
        if vl is not None:
            posts[b][(i, j)] = vl[k]
    return links, posts


def iter_decoded(
    model: AlignsBatches,
    index: BatchIndex,
    *,
    method: str = "agreement",
    threshold: float = 0.3,
    with_posteriors: bool = False,
) -> Iterator[tuple[list[int], list, list, list, list]]:
    """Per batch: (rows, forward links, forward posteriors, reverse links, reverse
    posteriors), each list aligned with `rows`; links sorted (i, j), posteriors dicts."""
    if method not in DECODINGS:
        raise AlignersInputError(f"unknown decoding {method!r}; expected one of {DECODINGS}")
    for k in range(len(index)):
        batch = index.batch(k).to(model.keys.device)
        rows = batch.rows.tolist()
        mask = batch.mask
        with torch.no_grad():
            if method == "viterbi":
                fwd, rev = model.viterbi(batch)
                hf = (fwd >= 0).nonzero()
                f_links = torch.stack([hf[:, 0], fwd[hf[:, 0], hf[:, 1]], hf[:, 1]], 1)
                hr = (rev >= 0).nonzero()
                r_links = torch.stack([hr[:, 0], hr[:, 1], rev[hr[:, 0], hr[:, 1]]], 1)
                vf = vr = None
                if with_posteriors:
                    post = model.posteriors(batch)
                    vf = post.links_fwd[f_links[:, 0], f_links[:, 1], f_links[:, 2]]
                    vr = post.links_bwd[r_links[:, 0], r_links[:, 1], r_links[:, 2]]
            else:
                post = model.posteriors(batch)
                if method == "agreement":
                    score_f = score_r = post.links_fwd * post.links_bwd
                else:
                    score_f, score_r = post.links_fwd, post.links_bwd
                f_links = ((score_f > threshold) & mask).nonzero()
                r_links = ((score_r > threshold) & mask).nonzero()
                vf = score_f[f_links[:, 0], f_links[:, 1], f_links[:, 2]]
                vr = score_r[r_links[:, 0], r_links[:, 1], r_links[:, 2]]
        lf, pf = _group(len(rows), f_links, vf if with_posteriors else None)
        lr, pr = _group(len(rows), r_links, vr if with_posteriors else None)
        yield rows, [sorted(x) for x in lf], pf, [sorted(x) for x in lr], pr


def decode_corpus(
    model: AlignsBatches,
    index: BatchIndex,
    *,
    method: str = "agreement",
    threshold: float = 0.3,
    with_posteriors: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Decoded:
    """Align every sentence pair of `index` with `model`'s current parameters.

    Sentences with an empty side get no links. Cost: one E-step (posterior methods) or
    one Viterbi pass over the corpus, plus O(links) Python objects (for large corpora
    `decode_lines` keeps only the formatted lines).
    """
    N = index.n_sentences
    out = Decoded([[] for _ in range(N)], [[] for _ in range(N)])
    if with_posteriors:
        out.posteriors_fwd = [{} for _ in range(N)]
        out.posteriors_rev = [{} for _ in range(N)]
    for rows, lf, pf, lr, pr in iter_decoded(model, index, method=method, threshold=threshold,
                                            with_posteriors=with_posteriors):
        for b, r in enumerate(rows):
            out.fwd[r], out.rev[r] = lf[b], lr[b]
            if with_posteriors:
                out.posteriors_fwd[r], out.posteriors_rev[r] = pf[b], pr[b]
        if progress is not None:
            progress(len(rows))
    return out


def _line(links, posts) -> str:
    if posts is None:
        return " ".join(f"{i}-{j}" for i, j in links)
    return " ".join(f"{i}-{j}:{posts[(i, j)]:.6g}" if (i, j) in posts else f"{i}-{j}"
                    for i, j in links)


def decode_lines(
    model: AlignsBatches,
    index: BatchIndex,
    *,
    method: str = "agreement",
    threshold: float = 0.3,
    heuristic: str | None = None,
    posteriors: bool = False,
    outputs: tuple[str, ...] = ("fwd", "rev", "sym"),
    progress: Callable[[int], None] | None = None,
) -> dict[str, list[str]]:
    """Pharaoh lines (`i-j`, or `i-j:p` with `posteriors`) per output in `outputs`:
    "fwd", "rev" and "sym" (symmetrized with `heuristic`; None/"none" = forward links).

    Memory: the formatted lines only (links are formatted batch by batch).
    """
    from aligners.symmetrize import HEURISTICS, symmetrize

    if heuristic not in (None, "none") and heuristic not in HEURISTICS:
        raise AlignersInputError(f"unknown heuristic {heuristic!r}; expected one of {HEURISTICS}")
    N = index.n_sentences
    out = {name: [""] * N for name in outputs}
    for rows, lf, pf, lr, pr in iter_decoded(model, index, method=method, threshold=threshold,
                                            with_posteriors=posteriors):
        for b, r in enumerate(rows):
            if "fwd" in out:
                out["fwd"][r] = _line(lf[b], pf[b] if posteriors else None)
            if "rev" in out:
                out["rev"][r] = _line(lr[b], pr[b] if posteriors else None)
            if "sym" in out:
                if heuristic in (None, "none"):
                    links, posts = lf[b], pf[b] if posteriors else None
                else:
                    links = sorted(symmetrize(lf[b], lr[b], heuristic))
                    posts = {**pr[b], **pf[b]} if posteriors else None
                out["sym"][r] = _line(links, posts)
        if progress is not None:
            progress(len(rows))
    return out


def combine(decoded: Decoded, heuristic: str | None) -> list[list[Link]]:
    """Symmetrize forward and reverse links with an atools heuristic (None: forward only)."""
    if heuristic is None or heuristic == "none":
        return decoded.fwd
    from aligners.symmetrize import HEURISTICS, symmetrize_corpus

    if heuristic not in HEURISTICS:
        raise AlignersInputError(f"unknown heuristic {heuristic!r}; expected one of {HEURISTICS}")
    return [sorted(x) for x in symmetrize_corpus(decoded.fwd, decoded.rev, heuristic)]
