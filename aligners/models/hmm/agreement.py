"""Both directions of IBM Model 1 -> HMM word alignment, trained jointly by EM (optionally by
agreement, Liang, Taskar & Klein 2006), with sparse lexical tables over co-occurring pairs.

"Forward" = the source sentence generates the target (one source position or NULL per target
word, table p(t|s)); "backward" = the target generates the source (table p(s|t)). Every
posterior is kept in (B, I, J) = (source, target) orientation for both directions.

E-step with agreement: each direction's link posteriors p_f(i,j), p_b(i,j) are multiplied,
q = p_f * p_b, and q is the expected link count of *both* directions' lexical tables; the
rest of each word's mass (1 - sum q) is its NULL count. Jump counts stay per direction.
Expected counts live in buffers that `all_reduce_counts` sums across processes (DDP).
M-step of the sparse lexical tables (`normalise_counts`): both directions share one pair
index (`aligners.data.bitext.PairIndex`), so p(t|s) and p(s|t) are the same vector of
expected counts (P + 1,) normalised by source word or by target word.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from aligners.data.bitext import Batch, PairIndex
from aligners.models._scatter import scatter_add2_, scatter_add_
from aligners.models.hmm.config import WordAlignConfig, WordDecoding
from aligners.models.hmm.directional import (
    hmm_direction_posteriors,
    hmm_direction_viterbi,
    ibm1_posteriors,
    jump_m_step,
)

__all__ = ["WordAlignConfig", "WordDecoding", "WordAligner", "DirectionPosteriors",
           "normalise_counts", "normalise_dense"]

_TINY = 1e-20  # floor of every probability so that log() stays finite


def normalise_counts(
    counts: torch.Tensor,
    given: torch.Tensor,
    *,
    n_given: int,
    n_outcomes: int,
    alpha: float,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sparse conditional table from expected counts: (P+1,) -> (P+1,) probabilities.

    `given (P,)` is the conditioning word of each pair. alpha = 0: maximum likelihood
    c / sum_given c; alpha > 0: variational Bayes with a symmetric Dirichlet(alpha) prior over
    `n_outcomes` words, exp(digamma(c + a) - digamma(sum c + n a)). Slot P gets the floor.
    `out (P+1,)`, when given, receives the result (it may be the old table, not `counts`).
    Cost O(P) time; maximum likelihood needs no (P,) temporary besides `out`.
    """
    c = counts[:-1]
    tot = torch.zeros(n_given, dtype=c.dtype, device=c.device).index_add_(0, given, c)
    if out is None:
        out = torch.empty_like(counts)
    body = out[:-1]
    if alpha > 0:
        num = torch.exp(torch.digamma(c + alpha))
        den = torch.exp(torch.digamma(tot + alpha * n_outcomes))
        torch.div(num, den[given].clamp_min(_TINY), out=body)
    else:  # gather the denominators into `out`, then divide in place: no P-sized temporaries
        torch.index_select(tot.clamp_min_(_TINY), 0, given, out=body)
        torch.div(c, body, out=body)
    out[-1] = _TINY
    return out.clamp_min_(_TINY)


def normalise_dense(counts: torch.Tensor, *, alpha: float) -> torch.Tensor:
    """A dense distribution (V,) from expected counts (the NULL word's table). Cost O(V)."""
    if alpha > 0:
        total = counts.sum() + alpha * len(counts)
        p = torch.exp(torch.digamma(counts + alpha) - torch.digamma(total))
    else:
        p = counts / counts.sum().clamp_min(_TINY)
    return p.clamp_min(_TINY)


@dataclass
class DirectionPosteriors:
    """Posteriors of one batch. links_* (B, I, J); null_fwd (B, J); null_bwd (B, I)."""

    log_likelihood: torch.Tensor  # (2,) summed over the batch: forward, backward
    links_fwd: torch.Tensor
    null_fwd: torch.Tensor
    links_bwd: torch.Tensor
    null_bwd: torch.Tensor
    jumps_fwd: torch.Tensor | None = None
    jumps_bwd: torch.Tensor | None = None


class WordAligner(nn.Module):
    """Parameters (buffers) of both directions; counts for EM. No Lightning in here.

    Buffers: keys (P,) sorted pair keys src*Vt+tgt; t_fwd, t_bwd (P+1,) p(t|s), p(s|t)
    (slot P = unseen pair); null_tgt (Vt,), null_src (Vs,); jump_fwd, jump_bwd (2K+1,).
    Memory O(P + V) floats. `stage` is "ibm1" or "hmm" (which model posteriors use).
    """

    def __init__(self, *, keys: torch.Tensor, n_src_words: int, n_tgt_words: int,
                 config: WordAlignConfig | None = None):
        super().__init__()
        self.config = config or WordAlignConfig()
        self.n_src_words, self.n_tgt_words = n_src_words, n_tgt_words
        P, K = keys.numel(), self.config.max_jump
        self.register_buffer("keys", keys.long())
        self.register_buffer("t_fwd", torch.full((P + 1,), 1.0 / n_tgt_words))
        self.register_buffer("t_bwd", torch.full((P + 1,), 1.0 / n_src_words))
        self.register_buffer("null_tgt", torch.full((n_tgt_words,), 1.0 / n_tgt_words))
        self.register_buffer("null_src", torch.full((n_src_words,), 1.0 / n_src_words))
        self.register_buffer("jump_fwd", torch.full((2 * K + 1,), 1.0 / (2 * K + 1)))
        self.register_buffer("jump_bwd", torch.full((2 * K + 1,), 1.0 / (2 * K + 1)))
        self.register_buffer("iteration", torch.zeros((), dtype=torch.long))
        self.reset_counts()

    @classmethod
    def from_index(cls, index: PairIndex, config: WordAlignConfig | None = None):
        return cls(keys=index.keys, n_src_words=index.n_src_words,
                   n_tgt_words=index.n_tgt_words, config=config)

    # ----------------------------------------------------------------- schedule
    @property
    def n_iterations(self) -> int:
        return self.config.ibm1_iterations + self.config.hmm_iterations

    def stage_of(self, iteration: int) -> str:
        return "ibm1" if iteration < self.config.ibm1_iterations else "hmm"

    @property
    def stage(self) -> str:
        """Model of the current parameters: "hmm" once Model 1 training is done."""
        done = int(self.iteration) >= self.config.ibm1_iterations
        return "hmm" if self.config.hmm_iterations > 0 and done else "ibm1"

    # ----------------------------------------------------------------- E-step
    def _lattice_inputs(self, batch: Batch) -> list[tuple]:
        """Per direction (forward, then backward: transposed) the lattice's inputs: link
        probabilities (B, I, J) / (B, J, I), NULL probabilities, lengths, jump weights."""
        ids, sl, tl = batch.pair_ids, batch.src_lengths, batch.tgt_lengths
        return [(_gather(self.t_fwd, ids), _gather(self.null_tgt, batch.tgt),
                 {"src_lengths": sl, "tgt_lengths": tl}, self.jump_fwd),
                (_gather(self.t_bwd, ids).transpose(1, 2), _gather(self.null_src, batch.src),
                 {"src_lengths": tl, "tgt_lengths": sl}, self.jump_bwd)]

    def posteriors(self, batch: Batch, *, stage: str | None = None) -> DirectionPosteriors:
        """Both directions' posteriors for one batch. Cost O(B I J) (Model 1) or the HMM
        lattice's O(B J I^2 + B I J^2)."""
        stage = stage or self.stage
        inputs = self._lattice_inputs(batch.to(self.keys.device))
        if stage == "ibm1":
            out = [ibm1_posteriors(p, n, **lengths) for p, n, lengths, _ in inputs]
        else:
            out = [hmm_direction_posteriors(p, n, **lengths, jump_weights=jw, p0=self.config.p0)
                   for p, n, lengths, jw in inputs]
        (llf, lf, nuf, *jf), (llb, lb, nub, *jb) = out  # (jumps: the HMM's only)
        ll = torch.stack([llf.sum(), llb.sum()]).double()
        return DirectionPosteriors(ll, lf, nuf, lb.transpose(1, 2), nub, *jf, *jb)

    def viterbi(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Best alignments: forward (B, J) source position per target word, backward (B, I)
        target position per source word; -1 = NULL or padding."""
        batch = batch.to(self.keys.device)
        if self.stage == "ibm1":
            post = self.posteriors(batch, stage="ibm1")
            return (_argmax_or_null(post.links_fwd, post.null_fwd, 1, batch.tgt_lengths),
                    _argmax_or_null(post.links_bwd, post.null_bwd, 2, batch.src_lengths))
        fwd, bwd = (hmm_direction_viterbi(p, n, **lengths, jump_weights=jw, p0=self.config.p0)
                    for p, n, lengths, jw in self._lattice_inputs(batch))
        return fwd, bwd

    # ----------------------------------------------------------------- EM
    def reset_counts(self) -> None:
        P, K, dev = self.keys.numel(), self.config.max_jump, self.keys.device
        # with agreement both directions share one count vector (same link counts); without,
        # the two are the columns of one (P+1, 2) tensor (one cache line per pair id in the
        # E-step's scatter; same sums)
        if self.config.agreement:
            self.c_lex = self.c_fwd = self.c_bwd = torch.zeros(P + 1, device=dev)
        else:
            self.c_lex = torch.zeros(P + 1, 2, device=dev)
            self.c_fwd, self.c_bwd = self.c_lex[:, 0], self.c_lex[:, 1]
        self.c_null_tgt = torch.zeros(self.n_tgt_words, device=dev)
        self.c_null_src = torch.zeros(self.n_src_words, device=dev)
        self.c_jump = torch.zeros(2, 2, 2 * K + 1, dtype=torch.float64, device=dev)
        self.c_loglik = torch.zeros(2, dtype=torch.float64, device=dev)

    def accumulate(self, batch: Batch, *, stage: str | None = None) -> DirectionPosteriors:
        """E-step of one batch: add its expected counts to the count buffers (`stage`:
        that of the iteration under way unless given)."""
        batch = batch.to(self.keys.device)
        post = self.posteriors(batch, stage=stage or self.stage_of(int(self.iteration)))
        ids = batch.pair_ids.reshape(-1)
        if self.config.agreement:
            q = post.links_fwd * post.links_bwd
            scatter_add_(self.c_fwd, ids, q.reshape(-1))  # c_bwd is the same tensor
            jv = torch.arange(q.shape[2], device=q.device)[None, :] < batch.tgt_lengths[:, None]
            iv = torch.arange(q.shape[1], device=q.device)[None, :] < batch.src_lengths[:, None]
            null_f = (1 - q.sum(1)).clamp_min(0) * jv
            null_b = (1 - q.sum(2)).clamp_min(0) * iv
        else:
            scatter_add2_(self.c_lex, ids, post.links_fwd, post.links_bwd)
            null_f, null_b = post.null_fwd, post.null_bwd
        scatter_add_(self.c_null_tgt, batch.tgt.reshape(-1), null_f.reshape(-1))
        scatter_add_(self.c_null_src, batch.src.reshape(-1), null_b.reshape(-1))
        if post.jumps_fwd is not None:
            self.c_jump[0] += post.jumps_fwd
            self.c_jump[1] += post.jumps_bwd
        self.c_loglik += post.log_likelihood
        return post

    def all_reduce_counts(self) -> None:
        """Sum the count buffers over all processes, in a fixed order (no-op without
        torch.distributed)."""
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            for t in (self.c_lex, self.c_null_tgt, self.c_null_src, self.c_jump, self.c_loglik):
                dist.all_reduce(t)

    def m_step(self) -> torch.Tensor:
        """Sum the counts over the processes (`all_reduce_counts`), normalise them into new
        tables (the current iteration's stage); returns the log-likelihood (2,) of the
        E-step just finished (forward, backward) and clears the counts."""
        stage = self.stage_of(int(self.iteration))
        self.all_reduce_counts()
        c = self.config
        P = self.keys.numel()
        # peak memory: one (P,) int64 word-id vector at a time, tables rewritten in place
        given = torch.div(self.keys, self.n_tgt_words, rounding_mode="floor")
        self.t_fwd = normalise_counts(self.c_fwd, given, n_given=self.n_src_words,
                                      n_outcomes=self.n_tgt_words, alpha=c.alpha,
                                      out=self._table_out("t_fwd"))
        given = torch.remainder(self.keys, self.n_tgt_words, out=given)
        self.t_bwd = normalise_counts(self.c_bwd, given, n_given=self.n_tgt_words,
                                      n_outcomes=self.n_src_words, alpha=c.alpha,
                                      out=self._table_out("t_bwd"))
        del given
        self.null_tgt = normalise_dense(self.c_null_tgt, alpha=c.null_alpha)
        self.null_src = normalise_dense(self.c_null_src, alpha=c.null_alpha)
        if stage == "hmm":
            self.jump_fwd = jump_m_step(self.c_jump[0], self.jump_fwd)
            self.jump_bwd = jump_m_step(self.c_jump[1], self.jump_bwd)
        assert self.t_fwd.numel() == P + 1
        ll = self.c_loglik.clone()
        self.iteration += 1
        self.reset_counts()
        return ll

    def _table_out(self, name: str) -> torch.Tensor | None:
        """The current table `name` to overwrite in the M-step, when it is safe to do so."""
        t = getattr(self, name)
        ok = t.dtype == self.c_fwd.dtype and t.is_contiguous() and t._base is None
        return t if ok and not t.requires_grad else None

    def fit(self, index: PairIndex, *, progress=None) -> list[list[float]]:
        """Run the whole schedule on one process (the steps that `training.hmm.LitEM`
        drives under Lightning); returns per-iteration log-likelihoods."""
        history = []
        for it in range(int(self.iteration), self.n_iterations):
            stage = self.stage_of(it)  # (read once: `iteration` may live on a GPU)
            for k in range(len(index)):
                self.accumulate(index.batch(k), stage=stage)
                if progress is not None:
                    progress(it, k)
            history.append(self.m_step().tolist())
        return history


def _gather(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """table[ids] for int32/int64 ids of any shape (index_select: faster than indexing)."""
    return table.index_select(0, ids.reshape(-1)).view(ids.shape)


def _argmax_or_null(links, null, dim, lengths):
    """Model 1 Viterbi: best source per target word (dim=1) or target per source (dim=2)."""
    best, arg = links.max(dim)
    out = torch.where(best > null, arg, torch.full_like(arg, -1))
    valid = torch.arange(out.shape[1], device=out.device)[None, :] < lengths[:, None]
    return torch.where(valid, out, torch.full_like(out, -1))
