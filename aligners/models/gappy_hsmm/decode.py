"""Decoding and the plain EM loop of the phrasal aligner (no Lightning).

Link matrices per sentence come from either model family: a `PhrasalAligner` (its phrasal
edges expanded to word links, `agreement.sparse_link_posteriors`) or a `WordAligner`. Methods:
"agreement" (product of the two directions' link posteriors > threshold; many-to-many),
"posterior" (each direction > threshold, then an atools heuristic), "viterbi" (each
direction's best structure, then the heuristic).
"""

from __future__ import annotations

import numpy as np
import torch

from aligners.data.bitext import PairIndex
from aligners.models.gappy_hsmm.model import PhrasalAligner, make_layout
from aligners.models.gappy_hsmm.prepared import ReuseCache
from aligners.models.hmm.agreement import WordAligner

__all__ = ["METHODS", "fit_phrasal", "prepared_batch", "batch_layout", "batch_link_matrices",
           "link_matrices", "decode"]

METHODS = ("agreement", "posterior", "viterbi")


def fit_phrasal(model: PhrasalAligner, index: PairIndex, *, progress=None,
                route: bool = True, prepared: ReuseCache | None = None,
                layouts: ReuseCache | None = None) -> list:
    """The remaining EM iterations on one process; per-iteration log-likelihoods (2,).
    Each batch is prepared (`PhrasalAligner.prepare`) once and reused by every iteration
    while the prepared batches fit their cache's budget (the rest are prepared again).
    `route=False`: every pair on the phrasal lattice (see `PhrasalAligner.accumulate`).
    `prepared`: a `ReuseCache` kept across calls (same model structure and `route`);
    filled here. `layouts`: batch number -> `CompactLayout` from
    `build_phrasal_aligner(layouts=)` (used to prepare the batch instead of matching it
    again; each entry is dropped once used)."""
    history = []
    prepared = ReuseCache() if prepared is None else prepared
    for it in range(int(model.iteration), model.config.iterations):
        model.reset_counts()
        for k in range(len(index)):
            model.accumulate(prepared=prepared_batch(model, index, k, prepared, layouts,
                                                     route=route))
            if progress is not None:
                progress(it, k)
        history.append(model.m_step().tolist())
    return history


def prepared_batch(model: PhrasalAligner, index: PairIndex, k: int, prepared: ReuseCache,
                   layouts: ReuseCache | None, *, route: bool = True):
    """Batch k prepared for the E-step: from `prepared`, else built (and offered to it)."""
    if k in prepared:
        return prepared[k]
    b = index.batch(k).to(model.word_keys.device)
    return prepared.put(k, model.prepare(b, batch_layout(model, b, layouts, k), route=route))


def batch_layout(model: PhrasalAligner, b, layouts: ReuseCache | None, k: int):
    """The `Layout` of batch k (`b`): `layouts[k].expand()` when kept there (the entry is
    then dropped), else matched (`make_layout`)."""
    kept = layouts.pop(k) if layouts is not None else None
    if kept is not None:
        return kept.expand(b.src.device)
    return make_layout(b, model.src_list, model.tgt_list, gappy=model.config.gappy)


def _word_links(model: WordAligner, b, viterbi: bool):
    if not viterbi:
        p = model.posteriors(b)
        return p.links_fwd, p.links_bwd
    f, r = model.viterbi(b)
    lf = torch.zeros(b.pair_ids.shape, device=f.device)
    lb = torch.zeros(b.pair_ids.shape, device=f.device)
    bj = (f >= 0).nonzero()
    lf[bj[:, 0], f[bj[:, 0], bj[:, 1]], bj[:, 1]] = 1
    bi = (r >= 0).nonzero()
    lb[bi[:, 0], bi[:, 1], r[bi[:, 0], bi[:, 1]]] = 1
    return lf, lb


def batch_link_matrices(model, index: PairIndex, *, viterbi: bool = False, progress=None,
                        prepared: ReuseCache | None = None):
    """Per batch of `index`, a list of (input row, forward (I,J), backward (I,J)) float32
    numpy link posteriors (0/1 under Viterbi): a generator, so a caller that turns each
    batch into lines holds one batch of matrices at a time. Pairs with an empty side are
    not batched (not yielded). `prepared`: the phrasal model's prepared batches of this
    `index` (`fit_phrasal(prepared=)`), reused where kept. Cost: one E-step (or Viterbi
    pass) over `index`."""
    dev = model.keys.device
    with torch.no_grad():
        for k in range(len(index)):
            prep = prepared.get(k) if prepared is not None else None
            b = prep.batch if prep is not None else index.batch(k).to(dev)  # (read once)
            if isinstance(model, WordAligner):
                lf, lb = _word_links(model, b, viterbi)
            elif prep is not None:
                lf, lb = model.link_posteriors(viterbi=viterbi, prepared=prep)
            else:
                lay = make_layout(b, model.src_list, model.tgt_list, gappy=model.config.gappy)
                lf, lb = model.link_posteriors(b, lay, viterbi=viterbi)
            lf, lb = lf.float().cpu().numpy(), lb.float().cpu().numpy()
            sl, tl = b.src_lengths.tolist(), b.tgt_lengths.tolist()
            yield [(r, lf[n, :sl[n], :tl[n]], lb[n, :sl[n], :tl[n]])
                   for n, r in enumerate(b.rows.tolist())]
            if progress is not None:
                progress(len(sl))


def link_matrices(model, index: PairIndex, *, viterbi: bool = False, progress=None) -> list:
    """Per sentence (input order) (forward (I,J), backward (I,J)) float32 numpy link
    posteriors (0/1 under Viterbi), all held at once (`batch_link_matrices` streams them);
    a pair with an empty side gets (0,0) matrices."""
    empty = (np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32))
    out = [empty] * index.n_sentences
    for chunk in batch_link_matrices(model, index, viterbi=viterbi, progress=progress):
        for r, lf, lb in chunk:
            out[r] = (lf, lb)
    return out


def decode(mats: list, *, method: str, threshold: float, heuristic: str) -> list:
    """Links per sentence, sorted (i, j), from `link_matrices` output (see module doc)."""
    from aligners.symmetrize import symmetrize

    if method not in METHODS:
        raise ValueError(f"unknown decoding {method!r}; expected one of {METHODS}")
    out = []
    for lf, lb in mats:
        if method == "agreement":
            out.append([tuple(x) for x in np.argwhere(lf * lb > threshold).tolist()])
            continue
        th = 0.5 if method == "viterbi" else threshold
        f = [tuple(x) for x in np.argwhere(lf > th).tolist()]
        r = [tuple(x) for x in np.argwhere(lb > th).tolist()]
        if heuristic == "none":
            out.append(sorted(set(f) | set(r)) if method != "agreement" else f)
        else:
            out.append(sorted(symmetrize(f, r, heuristic)))
    return out
