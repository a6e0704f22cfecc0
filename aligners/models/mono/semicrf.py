"""Semi-Markov phrasal CRF aligner (Yao et al. 2013, section 3.2).

Source segments of length <= Ls are labelled with target states: NULL, token states and
phrasal states of length <= Lt (linearised as in `_mono_states`), so ls:lt blocks are one
label. Decoding is the semi-Markov Viterbi in O(Ls * Lt^2 * I * J^2) per pair; training is
softmax-margin (Hamming cost inside the partition function, Gimpel & Smith 2010) with the gold
side a sum over every path consistent with the gold links. Posterior (minimum-Bayes-risk)
decoding keeps every link whose marginal probability exceeds a threshold (`decode_posterior`):
one forward-backward pass of the same lattice, O(Ls * Lt^2 * I * J^2) per pair as Viterbi.

Factored potentials (`factors`): source segment [n, n+k) labelled with target state c after
state c' scores w_emit . f(segment, c) + w_trans[bucket(c', c)] (first-order distortion);
position 0 is a START label that must be NULL (id 0), so a batch row has I_b + 1 positions.
"""

import torch
from torch import nn

from aligners.features.monolingual import NULL_FEATURES, feature_names
from aligners.lattices.factored_semimarkov import (
    factored_log_partition,
    factored_marginals,
    factored_viterbi,
)
from aligners.lattices.jump_transition import JumpTransition
from aligners.models.mono.combine import posterior_output
from aligners.models.mono.potentials import N_TRANS, MonoBatch, jump_layout, links_inside
from aligners.models.mono.states import state_phrase, state_table
from aligners.semirings import semiring_zero

__all__ = ["PhraseCRFAligner", "segments_to_output", "link_matrix", "JUMP_MIN_STATES"]

# batches with at least this many target states C reduce the transition with the bucketed
# `JumpTransition` (O(C) per position) instead of the dense (C, C) one (same results: exact up
# to float rounding, Viterbi bit-equal). On the CPU the lattice is bound by per-operation
# overhead, so the O(C^2) path stays faster up to C ~ 150-200 at 8 pairs x 30 words
# (the since-retired mono_jump_lattice benchmark, commit 9c3f34f; the git log "Issue 13:
# speed").
JUMP_MIN_STATES = 200


def segments_to_output(segments, *, tgt_len: int, max_tgt_len: int):
    """[(start, length, state)] -> (blocks [(src_start, src_len, tgt_start, tgt_len)],
    token links sorted [(i, j)]). NULL segments produce nothing."""
    blocks, links = [], []
    for s, k, c in segments:
        end, lt = state_phrase(c, tgt_len=tgt_len, max_tgt_len=max_tgt_len)
        if lt == 0:
            continue
        blocks.append((s, k, end - lt, lt))
        links += [(i, j) for i in range(s, s + k) for j in range(end - lt, end)]
    return blocks, sorted(links)


def link_matrix(*, tgt_len: int, max_tgt_len: int) -> torch.Tensor:
    """(C, J) bool: state c covers target word j (NULL and invalid states cover none): the
    links of the identity matrix inside each state's phrase (`links_inside`)."""
    st = state_table(tgt_len=tgt_len, max_tgt_len=max_tgt_len)
    return (links_inside(torch.eye(tgt_len), st).T > 0).contiguous()


class PhraseCRFAligner(nn.Module):
    """ls:lt phrasal aligner: its parameters, factored potentials, training loss and decoders."""

    def __init__(self, *, max_src_len: int = 3, max_tgt_len: int = 3, embedding: bool = False,
                 phrase_cues: bool = False):
        super().__init__()
        self.max_src_len, self.max_tgt_len, self.embedding = max_src_len, max_tgt_len, embedding
        self.phrase_cues = phrase_cues
        self.feature_names = feature_names(max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                                           embedding=embedding, phrase_cues=phrase_cues)
        self.w_emit = nn.Parameter(torch.zeros(len(self.feature_names)))
        self.w_null = nn.Parameter(torch.zeros(len(NULL_FEATURES)))
        self.w_trans = nn.Parameter(torch.zeros(N_TRANS))

    def emission(self, batch: MonoBatch) -> torch.Tensor:
        """(B, I, Ls, C) linear emission scores (NULL features in column 0), computed per example
        and padded. O(B*I*Ls*C*F)."""
        B, I, Ls, C = batch.valid.shape
        w = self.w_emit
        emit = torch.zeros(B, I, Ls, C, dtype=w.dtype, device=w.device)
        for b, e in enumerate(batch.examples):
            x = e.emit.to(w.device, non_blocking=True).to(w.dtype)
            emit[b, : e.emit.shape[0], :, : e.emit.shape[2]] = x @ w
        null_col = torch.zeros_like(emit[..., 0])
        null_col[:, :, 0] = batch.null.to(self.w_null.dtype) @ self.w_null
        return torch.cat([null_col.unsqueeze(-1), emit[..., 1:]], dim=-1)

    def factors(self, batch: MonoBatch, *, cost_weight: float = 0.0, gold_only: bool = False,
                emission: torch.Tensor | None = None):
        """Factored potentials: emit (B, I, Ls+1, C) (k = 0 slot is the semiring zero),
        trans (B, C, C) [c_next, c_prev], start (B, C). O(B*I*Ls*C*F)."""
        emit = self.emission(batch) if emission is None else emission
        if cost_weight:
            emit = emit + cost_weight * batch.cost
        neg = semiring_zero(emit.dtype)
        keep = batch.valid & batch.gold_ok if gold_only else batch.valid
        emit = emit.masked_fill(~keep, neg)
        emit = torch.cat([torch.full_like(emit[:, :, :1], neg), emit], dim=2)
        return emit, self.transition(batch), self.w_trans[batch.start_idx]

    def transition(self, batch: MonoBatch):
        """The label transition: dense (B, C, C) w_trans[bucket], or the same buckets as a
        `JumpTransition` when C >= `JUMP_MIN_STATES` (module constant)."""
        if batch.valid.shape[-1] >= JUMP_MIN_STATES:
            return JumpTransition(self.w_trans, jump_layout(batch))
        return self.w_trans[batch.trans_idx]

    def log_partition(self, factors, lengths: torch.Tensor) -> torch.Tensor:
        """(emit, trans, start) -> log Z (B,)."""
        return factored_log_partition(*factors, lengths=lengths)

    def viterbi(self, factors, lengths: torch.Tensor):
        """(emit, trans, start) -> (scores (B,), segment lists)."""
        return factored_viterbi(*factors, lengths=lengths)

    def loss(self, batch: MonoBatch, *, cost_weight: float = 1.0) -> torch.Tensor:
        """Summed softmax-margin loss: sum_b log Z_cost - log Z_gold (scalar).
        With cost_weight = 0 this is the conditional log-loss of the gold link set."""
        emission = self.emission(batch)
        z_cost = self.log_partition(
            self.factors(batch, cost_weight=cost_weight, emission=emission), batch.lengths)
        z_gold = self.log_partition(
            self.factors(batch, gold_only=True, emission=emission), batch.lengths)
        return (z_cost - z_gold).sum()

    @torch.no_grad()
    def decode(self, batch: MonoBatch):
        """Viterbi: per pair (blocks, token links, normalised score = score / I)."""
        scores, paths = self.viterbi(self.factors(batch), batch.lengths)
        out = []
        for ex, segs, sc in zip(batch.examples, paths, scores.tolist()):
            blocks, links = segments_to_output(segs, tgt_len=len(ex.tgt),
                                               max_tgt_len=self.max_tgt_len)
            out.append((blocks, links, sc / max(len(ex.src), 1)))
        return out

    @torch.no_grad()
    def segment_marginals(self, batch: MonoBatch) -> torch.Tensor:
        """(B, I, Ls+1, C) float64: P(source span [n, n+k) is one segment labelled with state
        c) under the model (`factored_marginals` of the float64 factors; 0 on padding and
        invalid states; the token CRF's linear chain is this lattice with Ls = 1).
        O(B * I * (C^2 + Ls*C)) time (O(B*I*C*(Ls + D + W)) with the jump transition)."""
        emit, trans, start = self.factors(batch)
        trans = (JumpTransition(trans.weights.double(), trans.layout)
                 if isinstance(trans, JumpTransition) else trans.double())
        return factored_marginals(emit.double(), trans, start.double(), lengths=batch.lengths)

    @torch.no_grad()
    def link_posteriors(self, batch: MonoBatch, marginals: torch.Tensor | None = None):
        """Per pair an (I_b, J_b) float64 matrix: P(source word i is linked to target word j)
        = the sum of the segment marginals whose source span covers i and whose target phrase
        covers j (NULL excluded); each entry in [0, 1], row i sums to E[target phrase length
        of word i]. O(B * I * Ls * C) + O(I_b * C * J_b) per pair on top of the marginals."""
        mu = self.segment_marginals(batch) if marginals is None else marginals
        B, I, K, C = mu.shape
        cover = torch.zeros(B, I, C, dtype=mu.dtype, device=mu.device)  # P(i has state c)
        for k in range(1, K):
            for d in range(min(k, I)):  # span [n, n+k) covers word n + d
                cover[:, d:] += mu[:, : I - d, k]
        out = []
        for b, ex in enumerate(batch.examples):
            M = link_matrix(tgt_len=len(ex.tgt), max_tgt_len=self.max_tgt_len)
            out.append(cover[b, : len(ex.src), : M.shape[0]] @ M.to(mu.device, mu.dtype))
        return out

    @torch.no_grad()
    def decode_posterior(self, batch: MonoBatch, threshold: float = 0.5):
        """Posterior (MBR) decoding: per pair (blocks = the span pairs whose own marginal
        exceeds `threshold`, token links = the word pairs whose link posterior exceeds it,
        normalised score = the summed posteriors of those links / I, i.e. the expected
        number of correct output links per source word). Links are not constrained to one
        path: lowering the threshold trades precision for recall. Cost: `link_posteriors`."""
        mu = self.segment_marginals(batch)
        out = []
        for b, (ex, post) in enumerate(zip(batch.examples, self.link_posteriors(batch, mu))):
            _, links, score = posterior_output(post, threshold)
            segs = [(n, k, c) for n, k, c in (mu[b] > threshold).nonzero().tolist()
                    if c != 0 and k > 0]
            blocks, _ = segments_to_output(segs, tgt_len=len(ex.tgt),
                                           max_tgt_len=self.max_tgt_len)
            out.append((sorted(blocks), links, score))
        return out

    def l2(self) -> torch.Tensor:
        """Squared norm of the sparse weights (a neural scorer is regularised by AdamW)."""
        return (self.w_emit ** 2).sum() + (self.w_null ** 2).sum() + (self.w_trans ** 2).sum()
