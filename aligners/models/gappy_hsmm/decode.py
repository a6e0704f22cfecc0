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
from aligners.models.hmm.agreement import WordAligner

__all__ = ["METHODS", "fit_phrasal", "batch_layout", "link_matrices", "decode"]

METHODS = ("agreement", "posterior", "viterbi")


def fit_phrasal(model: PhrasalAligner, index: PairIndex, *, progress=None,
                route: bool = True, prepared: dict | None = None,
                layouts: list | None = None) -> list:
    """The remaining EM iterations on one process; per-iteration log-likelihoods (2,).
    Each batch is prepared once (`PhrasalAligner.prepare`) and reused by every iteration.
    `route=False`: every pair on the phrasal lattice (see `PhrasalAligner.accumulate`).
    `prepared`: a dict (batch number -> prepared batch) kept across calls (same model
    structure and `route`); filled here where empty. `layouts`: per batch its
    `CompactLayout` from `build_phrasal_aligner(layouts=)` (used to prepare the batch instead
    of matching it again; each entry is set to None once used)."""
    history = []
    prepared = {} if prepared is None else prepared  # built in the first pass, then reused
    for it in range(int(model.iteration), model.config.iterations):
        model.reset_counts()
        for k in range(len(index)):
            if k not in prepared:
                b = index.batch(k).to(model.word_keys.device)
                prepared[k] = model.prepare(b, batch_layout(model, b, layouts, k), route=route)
            model.accumulate(prepared=prepared[k])
            if progress is not None:
                progress(it, k)
        history.append(model.m_step().tolist())
    return history


def batch_layout(model: PhrasalAligner, b, layouts: list | None, k: int):
    """The `Layout` of batch k (`b`): `layouts[k].expand()` when handed over (that entry is
    then dropped), else matched (`make_layout`)."""
    if layouts is not None and layouts[k] is not None:
        lay, layouts[k] = layouts[k].expand(b.src.device), None
        return lay
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


def link_matrices(model, index: PairIndex, *, viterbi: bool = False, progress=None) -> list:
    """Per sentence (input order) (forward (I,J), backward (I,J)) float32 numpy link
    posteriors (0/1 under Viterbi). Cost: one E-step (or Viterbi pass) over `index`."""
    out = [None] * index.n_sentences
    dev = model.keys.device
    with torch.no_grad():
        for k in range(len(index)):
            b = index.batch(k).to(dev)
            if isinstance(model, WordAligner):
                lf, lb = _word_links(model, b, viterbi)
            else:
                lay = make_layout(b, model.src_list, model.tgt_list, gappy=model.config.gappy)
                lf, lb = model.link_posteriors(b, lay, viterbi=viterbi)
            lf, lb = lf.float().cpu().numpy(), lb.float().cpu().numpy()
            sl, tl = b.src_lengths.tolist(), b.tgt_lengths.tolist()
            for n, r in enumerate(b.rows.tolist()):
                out[r] = (lf[n, :sl[n], :tl[n]], lb[n, :sl[n], :tl[n]])
            if progress is not None:
                progress(len(sl))
    for n, m in enumerate(out):  # pairs with an empty side are not batched
        if m is None:
            out[n] = (np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32))
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
