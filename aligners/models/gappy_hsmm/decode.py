"""The phrasal aligner's link matrices per batch (its phrasal edges expanded to word links,
`agreement.sparse_link_posteriors`; read into lines by `folder.PhrasalAligned`) and its plain
EM loop (no Lightning; `training.gappy_hsmm` drives the same steps under Lightning).
"""

from __future__ import annotations

import torch

from aligners.data.bitext import PairIndex
from aligners.models.gappy_hsmm.layout import make_layout
from aligners.models.gappy_hsmm.model import PhrasalAligner
from aligners.models.gappy_hsmm.prepared import ReuseCache

__all__ = ["fit_phrasal", "prepared_batch", "batch_link_matrices"]


def fit_phrasal(model: PhrasalAligner, index: PairIndex, *, progress=None,
                prepared: ReuseCache | None = None, layouts: ReuseCache | None = None) -> list:
    """The remaining EM iterations on one process; per-iteration log-likelihoods (2,).
    Each batch is prepared (`PhrasalAligner.prepare`) once and reused by every iteration
    while the prepared batches fit their cache's budget (the rest are prepared again).
    `prepared`: a `ReuseCache` kept across calls (same model structure); filled here.
    `layouts`: batch number -> `CompactLayout` from `build_phrasal_aligner(layouts=)` (used
    to prepare the batch instead of matching it again; each entry is dropped once used)."""
    history = []
    prepared = ReuseCache() if prepared is None else prepared
    for it in range(int(model.iteration), model.config.iterations):
        model.reset_counts()
        for k in range(len(index)):
            model.accumulate(prepared_batch(model, index, k, prepared, layouts))
            if progress is not None:
                progress(it, k)
        history.append(model.m_step().tolist())
    return history


def prepared_batch(model: PhrasalAligner, index: PairIndex, k: int, prepared: ReuseCache,
                   layouts: ReuseCache | None):
    """Batch k prepared for the E-step: from `prepared`, else built (and offered to it) from
    its layout, `layouts[k].expand()` when kept there (the entry is then dropped), else
    matched (`make_layout`)."""
    if k in prepared:
        return prepared[k]
    b = index.batch(k).to(model.word_keys.device)
    kept = layouts.pop(k) if layouts is not None else None
    lay = kept.expand(b.src.device) if kept is not None else make_layout(
        b, model.src_list, model.tgt_list, gappy=model.config.gappy)
    return prepared.put(k, model.prepare(b, lay))


def batch_link_matrices(model, index: PairIndex, *, viterbi: bool = False,
                        prepared: ReuseCache | None = None):
    """Per batch of `index`, a list of (input row, forward (I,J), backward (I,J)) float32
    numpy link posteriors (0/1 under Viterbi): a generator, so a caller that turns each
    batch into lines holds one batch of matrices at a time. Pairs with an empty side are
    not batched (not yielded). `prepared`: the phrasal model's prepared batches of this
    `index` (`fit_phrasal(prepared=)`), reused where kept (`prepared_batch`). Cost: one
    E-step (or Viterbi pass) over `index`."""
    prepared = ReuseCache(0) if prepared is None else prepared  # (0: none kept)
    with torch.no_grad():
        for k in range(len(index)):
            prep = prepared_batch(model, index, k, prepared, None)
            b = prep.batch
            lf, lb = model.link_posteriors(prep, viterbi=viterbi)
            lf, lb = lf.float().cpu().numpy(), lb.float().cpu().numpy()
            sl, tl = b.src_lengths.tolist(), b.tgt_lengths.tolist()
            yield [(r, lf[n, :sl[n], :tl[n]], lb[n, :sl[n], :tl[n]])
                   for n, r in enumerate(b.rows.tolist())]
