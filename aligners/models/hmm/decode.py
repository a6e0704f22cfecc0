"""Decoding word alignments of both directions: Viterbi, posterior thresholding, agreement.

Methods (every result is in source-target order, 0-based):
- "viterbi": each direction's best alignment (NULL links dropped);
- "posterior": each direction's links whose posterior exceeds `threshold`;
- "agreement": links whose product of the two directions' posteriors exceeds `threshold`
  (Liang et al. 2006); both directions get the same links.
Then `aligners.symmetrize` combines the two directions with any atools heuristic.

`decode_lines` is the family's one decoder (`folder.WordAligned.lines`: the CLI, the Hydra
task and the benchmarks). It imports no model: it needs of the model `keys` (a tensor on
its device), `viterbi(batch) -> (fwd (B, J) source index or -1, rev (B, I) target index or
-1)` and `posteriors(batch)` with `links_fwd`, `links_bwd` (B, I, J); of the index `len()`,
`n_sentences` and `batch(k)` (`.to(device)`, `rows (B,)`, `mask (B, I, J)`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from aligners.data.pharaoh import link_line
from aligners.errors import AlignersInputError
from aligners.models.hmm._pharaoh_kernel import link_lines
from aligners.models.hmm.config import DECODING, METHODS
from aligners.symmetrize import check_heuristic, symmetrize

__all__ = ["decode_lines"]

Link = tuple[int, int]


@dataclass
class _HostLinks:
    """One batch's links on the host: rows (B,) input rows; per direction (fwd, rev) links
    (K, 2) int64 [i, j] sorted by (batch row, i, j), counts (B,) links per batch row and
    values (K,) their posteriors (or None)."""

    rows: np.ndarray
    links: tuple[np.ndarray, np.ndarray]
    counts: tuple[np.ndarray, np.ndarray]
    values: tuple[np.ndarray | None, np.ndarray | None]

    def per_row(self, d: int) -> list[dict[Link, float | None]]:
        """Direction d's links per batch row, in (i, j) order, each with its posterior (None
        without values). Cost O(links) Python tuples."""
        pairs = list(zip(*self.links[d].T.tolist(), strict=True)) if len(self.links[d]) else []
        vals = [None] * len(pairs) if self.values[d] is None else self.values[d].tolist()
        ends = np.cumsum(self.counts[d]).tolist()
        return [dict(zip(pairs[a:b], vals[a:b], strict=True))
                for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def _device_links(model, batch, method: str, threshold: float, with_posteriors: bool):
    """(forward links, forward values, reverse links, reverse values) of one batch on the
    model's device: links (K, 3) [b, i, j] sorted, values (K,) (None unless needed)."""
    post = model.posteriors(batch) if method != "viterbi" or with_posteriors else None
    if method == "viterbi":  # the cells on each direction's best path
        fwd, rev = model.viterbi(batch)
        on_f, on_r = _on_path(fwd, batch.mask, 1), _on_path(rev, batch.mask, 2)
        score_f, score_r = (None, None) if post is None else (post.links_fwd, post.links_bwd)
    else:
        score_f = post.links_fwd * post.links_bwd if method == "agreement" else post.links_fwd
        score_r = score_f if method == "agreement" else post.links_bwd
        on_f, on_r = (score_f > threshold) & batch.mask, (score_r > threshold) & batch.mask
    f_links, r_links = on_f.nonzero(), on_r.nonzero()  # row-major: sorted (b, i, j)
    if not with_posteriors:
        return f_links, None, r_links, None
    return (f_links, score_f[f_links[:, 0], f_links[:, 1], f_links[:, 2]],
            r_links, score_r[r_links[:, 0], r_links[:, 1], r_links[:, 2]])


def _on_path(path: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """(B, I, J) bool: the cells of a Viterbi path, (B, J) source per target word (dim 1) or
    (B, I) target per source word (dim 2), -1 = none; `mask` (B, I, J) bool gives the shape."""
    on = torch.zeros_like(mask)
    return on.scatter_(dim, path.clamp_min(0).unsqueeze(dim), (path >= 0).unsqueeze(dim))


def _host_batches(model, index, method: str, threshold: float, with_posteriors: bool
                  ) -> Iterator[_HostLinks]:
    """Decode batch by batch on the model's device; each batch's rows and links come to the
    host in one copy (and its posteriors in one more)."""
    if method not in METHODS:
        raise AlignersInputError(f"unknown decoding {method!r}; expected one of {METHODS}")
    for k in range(len(index)):
        batch = index.batch(k).to(model.keys.device)
        with torch.no_grad():
            f, vf, r, vr = _device_links(model, batch, method, threshold, with_posteriors)
        B = batch.rows.shape[0]
        # links per batch row, counted on the device (scatter: no size sync, no host loop)
        cf, cr = (torch.zeros(B, dtype=torch.long, device=x.device).index_add_(
            0, x[:, 0], torch.ones_like(x[:, 0])) for x in (f, r))
        flat = torch.cat([batch.rows.long(), cf, cr, f[:, 1:].reshape(-1),
                          r[:, 1:].reshape(-1)]).cpu().numpy()
        kf = f.shape[0]
        links = (flat[3 * B:3 * B + 2 * kf].reshape(-1, 2), flat[3 * B + 2 * kf:].reshape(-1, 2))
        values = (None, None)
        if with_posteriors:
            v = torch.cat([vf, vr]).cpu().numpy()
            values = (v[:kf], v[kf:])
        yield _HostLinks(flat[:B], links, (flat[B:2 * B], flat[2 * B:3 * B]), values)


def decode_lines(
    model, index, *,
    method: str = "agreement",
    threshold: float = DECODING.threshold,
    heuristic: str | None = None,
    posteriors: bool = False,
    outputs: tuple[str, ...] = ("fwd", "rev", "sym"),
    progress: Callable[[int], None] | None = None,
) -> dict[str, list[str]]:
    """Pharaoh lines (`i-j`, or `i-j:p` with `posteriors`) per output in `outputs`:
    "fwd", "rev" and "sym" (symmetrized with `heuristic`; None/"none" = forward links).

    Each batch is decoded on the model's device and comes to the host in one copy; its
    lines are written by one compiled pass (`_pharaoh_kernel.link_lines`), without a Python
    object per link, except for a symmetrization heuristic (per sentence, in Python:
    `aligners.symmetrize`). Memory: the formatted lines only (batch by batch).
    """
    plain_sym = heuristic in (None, "none")
    if not plain_sym:
        check_heuristic(heuristic)  # (ValueError naming it)
    N = index.n_sentences
    out = {name: [""] * N for name in outputs}
    for h in _host_batches(model, index, method, threshold, posteriors):
        rows = h.rows.tolist()
        lines = {}
        for d, name in ((0, "fwd"), (1, "rev")):
            if name in out or (d == 0 and "sym" in out and plain_sym):
                lk = h.links[d]
                lines[name] = link_lines(h.counts[d], lk[:, 0], lk[:, 1], h.values[d])
        if "sym" in out:
            if plain_sym:
                lines["sym"] = lines["fwd"]
            else:
                lines["sym"] = []
                for f, r in zip(h.per_row(0), h.per_row(1), strict=True):
                    links = sorted(symmetrize(list(f), list(r), heuristic))
                    posts = {**r, **f}  # each link's posterior where a direction has it
                    lines["sym"].append(link_line(
                        links, [posts.get(lk) for lk in links] if posteriors else None))
        for name in out:
            dest, got = out[name], lines[name]
            for b, r in enumerate(rows):
                dest[r] = got[b]
        if progress is not None:
            progress(len(rows))
    return out
