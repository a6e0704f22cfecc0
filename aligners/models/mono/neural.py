"""Neural semi-Markov CRF monolingual aligner (after Lan, Jiang & Xu 2021, ACL).

The phrasal CRF's lattice (`PhraseCRFAligner`: source segments of <= Ls words labelled with
NULL or a target phrase of <= Lt words, first-order distortion buckets `w_trans`) with
emission scores from a contextual encoder, trained end to end through
`factored_log_partition` (softmax-margin; conditional log-likelihood with cost_weight = 0):

    emit[n, k, c] = w_emit . f(segment, c)                  (the existing sparse features)
                  + MLP([a, b, a * b, (a - b)^2])           (span pair, c != NULL)
    emit[n, 1, NULL] = w_null . f0(n) + MLP0(a_n)           (NULL)

where a = mean of the projected word vectors of source span [n, n+k) + a length embedding,
b = the same for the target phrase of state c; word vectors are the encoder's (MiniLM by
default: `aligners.features.embedding.MiniLMEmbedder`, mean of word pieces, unit norm).
Frozen encoder (default): vectors are computed once per sentence (batched, memoised) and
stored on the examples. `finetune=True`: the encoder is a submodule, re-run (batched) on every
forward pass with gradients and trained with the rest; decoding (`attach(decoding=True)`, as
`MonoAligner.align` does) computes its vectors once, without gradients, before the scorer.
The options (`context`: "pair" is `pair_vectors`; `cosine`, `encoder_layers`, the encoder
precision) are described with their settings, `aligners.models.mono.config.MonoConfig`.

The squared difference (not |a - b|) makes the MLP's first layer a sum of per-span terms and
one bilinear form: W [a, b, a*b, (a-b)^2] = (W_a a + W_d a^2) + (W_b b + W_d b^2)
+ (W_ab - 2 W_d) (a*b), so the span-pair layer is ONE batched matrix product
(B, I*Ls*h, d) x (B, d, C) with no (B, I, Ls, C, d) tensor.

Shapes: per batch the scorer builds (B, I, Ls, h, C) hidden units, C = 1 + J * Lt, in blocks
of source positions (`CHUNK`), each for the batch rows whose source reaches it.
Cost per pair: encoder O(pieces) (context pair: one pass over both sentences) + O(I * Ls * C
* d * h) multiply-adds (+ O(I * Ls * C * D) with cosine) + the lattice's
O(I * (C^2 + Ls * C)); decoding as `PhraseCRFAligner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from aligners.errors import AlignersInputError
from aligners.features.embedding import word_means
from aligners.models.mono.config import CONTEXTS
from aligners.models.mono.potentials import MonoBatch, MonoExample
from aligners.models.mono.semicrf import PhraseCRFAligner
from aligners.models.mono.states import state_table

__all__ = ["NeuralCRFAligner", "make_encoder", "encoder_source", "pair_vectors", "PairMemo"]

# the span-pair scorer's hidden units are built in blocks of at most this many elements (at
# least one source position): 2 MB float32 blocks stay in cache; 32 MB blocks (1 << 23) made
# the scorer ~2x slower on the 2-core box (the git log "Issue 13: decoding speed (neural4)")
CHUNK = 1 << 19
# pairs (sentences) per encoder batch when decoding: less padding than the encoder's default
# 64 (wiki dev, bf16, 1 thread: 16 -> 1.49 s, 64 -> 2.05 s per 200 pairs); training keeps 64
DECODE_ENCODER_BATCH = 16


def encoder_source(source: dict | None) -> dict:
    """Normalise an encoder source: {"package": name} (the registry package with its weights)
    or {"path": folder} (a local Hugging Face encoder + tokenizer folder)."""
    from aligners.features.embedding import PACKAGE

    source = dict(source or {"package": PACKAGE})
    if set(source) == {"package"} and source["package"] == PACKAGE:
        return source
    if set(source) == {"path"} and isinstance(source["path"], str):
        return source
    raise AlignersInputError(f"encoder must be {{'package': '{PACKAGE}'}} or {{'path': DIR}}, "
                             f"got {source!r}")


def make_encoder(source: dict | None = None, *, device: str = "cpu", batch_size: int = 64):
    """The word-vector encoder (`MiniLMEmbedder`) of `source` (see `encoder_source`)."""
    from aligners.features.embedding import MiniLMEmbedder

    source = encoder_source(source)
    return MiniLMEmbedder(path=source.get("path"), device=device, batch_size=batch_size)


def pair_vectors(embedder, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], *,
                 batch_size: int | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Context "pair": per (src, tgt) pair unit-norm (src_vec (I, D), tgt_vec (J, D)) on the
    encoder's device from ONE pass over `[CLS] src [SEP] tgt [SEP]` (every word attends to
    the other sentence); a word = the mean of its pieces (`word_means`), 0 when cut off by
    `embedder.max_pieces`. Length-sorted batches of `batch_size` pairs (default the
    embedder's); differentiable with gradients on. O((I + J)^2) attention per pair."""
    batch_size = batch_size or embedder.batch_size
    pairs = [(list(s), list(t)) for s, t in pairs]
    if not pairs:
        return []
    pieces = embedder.tokenizer([s for s, _ in pairs], [t for _, t in pairs],
                                is_split_into_words=True, truncation=True,
                                max_length=embedder.max_pieces)["input_ids"]
    order = sorted(range(len(pairs)),
                   key=lambda n: (len(pieces[n]), len(pairs[n][0]) + len(pairs[n][1])))
    out: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(pairs)
    for start in range(0, len(order), batch_size):
        idx = order[start: start + batch_size]
        enc = embedder.tokenizer([pairs[n][0] for n in idx], [pairs[n][1] for n in idx],
                                 is_split_into_words=True, truncation=True,
                                 max_length=embedder.max_pieces, padding=True,
                                 return_tensors="pt")
        hidden = embedder.hidden_states(enc.to(embedder.device))  # (b, T, D)
        rows, cols, words, offsets, total = [], [], [], [], 0
        for b, n in enumerate(idx):
            I = len(pairs[n][0])
            for pos, (w, seq) in enumerate(zip(enc.word_ids(b), enc.sequence_ids(b))):
                if w is not None and seq is not None:
                    rows.append(b)
                    cols.append(pos)
                    words.append(total + w + (I if seq == 1 else 0))
            offsets.append(total)
            total += I + len(pairs[n][1])
        vec = word_means(hidden, rows, cols, words, total)
        for b, n in enumerate(idx):
            I, J = len(pairs[n][0]), len(pairs[n][1])
            out[n] = (vec[offsets[b]: offsets[b] + I], vec[offsets[b] + I: offsets[b] + I + J])
    return out


class PairMemo:
    """Frozen `pair_vectors` on the CPU, memoised per (src, tgt) pair."""

    def __init__(self):
        self._cache: dict[tuple[tuple[str, ...], tuple[str, ...]],
                          tuple[torch.Tensor, torch.Tensor]] = {}
        self._precision = None  # the embedder precision the memo was filled at

    @torch.no_grad()
    def __call__(self, embedder, pairs, *,
                 batch_size: int | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
        precision = getattr(embedder, "precision", "fp32")
        if precision != self._precision:
            self._cache.clear()
            self._precision = precision
        keys = [(tuple(s), tuple(t)) for s, t in pairs]
        todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        for k, (a, b) in zip(todo, pair_vectors(embedder, todo, batch_size=batch_size)):
            self._cache[k] = (a.float().cpu(), b.float().cpu())
        return [self._cache[k] for k in keys]


class NeuralCRFAligner(PhraseCRFAligner):
    """Phrasal CRF with encoder span-pair scores; `encoder` is a `MiniLMEmbedder`-like object
    (`encode`, `vectors`, `model`, `dim`). Parameters start random (seed the caller)."""

    def __init__(self, *, encoder, max_src_len: int = 3, max_tgt_len: int = 3, proj: int = 64,
                 hidden: int = 64, sparse: bool = True, finetune: bool = False,
                 embedding: bool = False, phrase_cues: bool = False,
                 source: dict | None = None, dim: int | None = None,
                 context: str = "separate", cosine: bool = False,
                 encoder_layers: int | None = None):
        super().__init__(max_src_len=max_src_len, max_tgt_len=max_tgt_len, embedding=embedding,
                         phrase_cues=phrase_cues)
        self.dim = int(encoder.dim)
        if dim is not None and int(dim) != self.dim:
            raise AlignersInputError(f"the encoder gives {self.dim}-d vectors, the model "
                                     f"expects {dim}")
        if context not in CONTEXTS:
            raise AlignersInputError(f"model.context must be one of {list(CONTEXTS)}, "
                                     f"got {context!r}")
        # a cheaper encoder: only its first `encoder_layers` transformer layers (None: all),
        # cut before it becomes a submodule, so a fine-tuned model saves only those layers
        if encoder_layers is not None:
            encoder.keep_layers(encoder_layers)
        self.encoder_layers = None if encoder_layers is None else int(encoder_layers)
        self.proj_dim, self.hidden, self.sparse, self.finetune = proj, hidden, sparse, finetune
        self.context, self.cosine = context, bool(cosine)
        self.source = dict(source) if source is not None else None
        self.proj = nn.Linear(self.dim * (2 if context == "both" else 1), proj)
        self.src_len = nn.Embedding(max_src_len, proj)
        self.tgt_len = nn.Embedding(max_tgt_len, proj)
        # first layer of the span-pair MLP over [a, b, a*b, (a-b)^2], split by block so that
        # the a and b parts are computed once per span, not once per span pair
        self.w_a, self.w_b = nn.Linear(proj, hidden), nn.Linear(proj, hidden, bias=False)
        self.w_ab = nn.Linear(proj, hidden, bias=False)
        self.w_diff = nn.Linear(proj, hidden, bias=False)
        self.out = nn.Linear(hidden, 1)
        self.null_mlp = nn.Sequential(nn.Linear(proj, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        if self.cosine:  # span cosines (raw encoder vectors, projected vectors) as inputs
            self.w_cos = nn.Linear(2, hidden, bias=False)  # into the hidden units
            self.out_cos = nn.Linear(2, 1, bias=False)  # and straight into the score
        self._pair_memo = PairMemo()
        if not sparse:
            self.w_emit.requires_grad_(False)
        if finetune:
            self.encoder_net = encoder.model  # a submodule: trained, saved, moved
            encoder.model.train()
        self.encoder = encoder  # a plain attribute: a frozen encoder is not saved

    def export_config(self) -> dict:
        """The JSON hyper-parameters that rebuild this model (with the encoder source)."""
        return {"max_src_len": self.max_src_len, "max_tgt_len": self.max_tgt_len,
                "embedding": self.embedding, "phrase_cues": self.phrase_cues, "dim": self.dim,
                "proj": self.proj_dim, "hidden": self.hidden, "sparse": self.sparse,
                "finetune": self.finetune, "context": self.context, "cosine": self.cosine,
                "encoder_layers": self.encoder_layers, "encoder": encoder_source(self.source)}

    def _apply(self, fn, *args, **kwargs):
        """`.to(device)` / `.double()` also move a frozen (non-submodule) encoder."""
        super()._apply(fn, *args, **kwargs)
        enc = self.__dict__.get("encoder")
        if enc is not None and not self.finetune:
            enc.model._apply(fn)
        if enc is not None:
            enc.device = str(next(enc.model.parameters()).device)
        return self

    def attach(self, examples: list[MonoExample], *,
               decoding: bool = False) -> list[MonoExample]:
        """Copies of `examples` with word vectors `src_vec`, `tgt_vec`: a frozen encoder's are
        computed (batched, memoised per sentence) and stored on the CPU; a fine-tuned
        encoder's are left to the forward pass (None), except with `decoding=True` (examples
        that only decode): then they are computed here too, without gradients and not
        memoised (the weights may still change), so that `featurise` can run them beside the
        sparse features.
        O(distinct sentences) encoder passes (context pair: one per pair)."""
        if self.finetune and not decoding:
            return [replace(e) for e in examples]
        net = self.encoder.model
        was_training = net.training
        net.eval()  # decoding vectors: no dropout, whatever mode the model is left in
        try:
            with torch.no_grad():
                src, tgt = self._encode(examples, frozen=not self.finetune,
                                        batch_size=DECODE_ENCODER_BATCH if decoding else None)
        finally:
            net.train(was_training)
        return [replace(e, src_vec=a.float().cpu(), tgt_vec=b.float().cpu())
                for e, a, b in zip(examples, src, tgt)]

    def _encode(self, examples, *, frozen: bool, batch_size: int | None = None):
        """Word vectors of `examples` by `context` (frozen: memoised on the CPU; else
        recomputed with gradients), `batch_size` pairs / sentences per encoder batch (default:
        the encoder's)."""
        n, src, tgt = len(examples), [], []
        if self.context in ("separate", "both"):
            sents = [e.src for e in examples] + [e.tgt for e in examples]
            vecs = (self.encoder.encode(sents, batch_size=batch_size) if frozen
                    else self.encoder.vectors(sents, batch_size=batch_size))
            src, tgt = [vecs[: n]], [vecs[n:]]
        if self.context in ("pair", "both"):
            pairs = [(e.src, e.tgt) for e in examples]
            pv = (self._pair_memo(self.encoder, pairs, batch_size=batch_size) if frozen
                  else pair_vectors(self.encoder, pairs, batch_size=batch_size))
            src.append([a for a, _ in pv])
            tgt.append([b for _, b in pv])
        if len(src) == 1:
            return src[0], tgt[0]
        return ([torch.cat(v, -1) for v in zip(*src)], [torch.cat(v, -1) for v in zip(*tgt)])

    def _vectors(self, examples) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Stored vectors when every example has them (a fine-tuned encoder's only without
        gradients: with gradients it always re-runs), else the encoder's."""
        stored = all(e.src_vec is not None for e in examples)
        if stored and not (self.finetune and torch.is_grad_enabled()):
            return [e.src_vec for e in examples], [e.tgt_vec for e in examples]
        return self._encode(examples, frozen=not self.finetune)

    def span_scores(self, batch: MonoBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, I, Ls, C) span-pair scores (column 0 = 0) and (B, I) NULL scores.
        O(B * I * Ls * C * proj * hidden), + O(B * I * Ls * C * D) with `cosine`."""
        B, I = batch.valid.shape[:2]
        S, a, bvec, lens, cos = self._span_features(batch)
        ilen = [len(e.src) for e in batch.examples] + [0] * (B - len(batch.examples))
        pair = self._pair_mlp(a, bvec, cos, ilen)
        n = torch.arange(I, device=a.device)
        pad = n[None, :] >= torch.tensor(ilen, device=a.device)[:, None]  # (B, I)
        pair = pair.masked_fill(pad[:, :, None, None] | (lens == 0)[:, None, None, :], 0.0)
        null = self.null_mlp(S).squeeze(-1)
        return pair, null

    def _span_features(self, batch: MonoBatch):
        """(S (B,I,d) projected source words, a (B,I,Ls,d) source span vectors, bvec (B,C,d)
        target state vectors, lens (B,C) state lengths, cos (B,I,Ls,C,2) or None)."""
        B, I, Ls, C = batch.valid.shape
        w = self.proj.weight
        src, tgt = self._vectors(batch.examples)
        pad = nn.utils.rnn.pad_sequence
        Rs = pad([v.to(w.device, w.dtype) for v in src], batch_first=True)
        Rt = pad([v.to(w.device, w.dtype) for v in tgt], batch_first=True)
        if Rs.shape[1] < I:  # (B, I, D) even when the batch is padded beyond its sentences
            Rs = torch.cat([Rs, Rs.new_zeros(B, I - Rs.shape[1], Rs.shape[2])], 1)
        S, T = self.proj(Rs), self.proj(Rt)
        # source spans [n, n+k): cumulative sums, mean + length embedding -> (B, I, Ls, d)
        n = torch.arange(I, device=w.device)
        k = torch.arange(1, Ls + 1, device=w.device)
        end = (n[:, None] + k[None, :]).clamp(max=I)

        def src_spans(X):  # (B, I, D) -> (B, I, Ls, D) span means
            cs = torch.cat([X.new_zeros(B, 1, X.shape[2]), X.cumsum(1)], 1)
            return (cs[:, end] - cs[:, n][:, :, None]) / k[None, None, :, None].to(w.dtype)

        a_mean = src_spans(S)
        a = a_mean + self.src_len.weight[None, None]
        # target states -> (start, length): mean over the phrase + length embedding (B, C, d)
        starts = torch.zeros(B, C, dtype=torch.long)
        lens = torch.zeros(B, C, dtype=torch.long)
        for b, e in enumerate(batch.examples):
            st = state_table(tgt_len=len(e.tgt), max_tgt_len=self.max_tgt_len)
            Cb = st["start"].shape[0]
            starts[b, :Cb] = st["start"].clamp(min=0)
            lens[b, :Cb] = st["length"]
        starts, lens = starts.to(w.device), lens.to(w.device)
        ends = (starts + lens).clamp(max=T.shape[1])
        rows = torch.arange(B, device=w.device)[:, None]

        def tgt_spans(X):  # (B, J, D) -> (B, C, D) state phrase means (0 for NULL)
            ct = torch.cat([X.new_zeros(B, 1, X.shape[2]), X.cumsum(1)], 1)
            return (ct[rows, ends] - ct[rows, starts]) / lens.clamp(min=1)[..., None].to(w.dtype)

        b_mean = tgt_spans(T)
        bvec = b_mean + self.tgt_len.weight[(lens - 1).clamp(min=0)]
        cos = None
        if self.cosine:  # (B, I, Ls, C, 2): cosine of the raw and of the projected span means
            unit = nn.functional.normalize
            cos = torch.stack([
                torch.einsum("bnkd,bcd->bnkc", unit(src_spans(Rs), dim=-1),
                             unit(tgt_spans(Rt), dim=-1)),
                torch.einsum("bnkd,bcd->bnkc", unit(a_mean, dim=-1), unit(b_mean, dim=-1))], -1)
        return S, a, bvec, lens, cos

    def _pair_mlp(self, a, bvec, cos, ilen):
        """(B, I, Ls, C) MLP scores of every (source span, target state) pair (rows I_b
        and beyond unspecified: the caller masks them)."""
        B, I, Ls, _ = a.shape
        C = bvec.shape[1]
        # MLP over [a, b, a*b, (a-b)^2]: per-span terms + one bilinear matrix product, over
        # blocks of source positions so that the hidden units stay under CHUNK elements
        d, H = a.shape[-1], self.hidden
        per_a = self.w_a(a) + self.w_diff(a * a)  # (B, I, Ls, H)
        per_b = (self.w_b(bvec) + self.w_diff(bvec * bvec)).transpose(1, 2).contiguous()
        per_b = per_b[:, None, None]  # (B, 1, 1, H, C), C fastest as the hidden blocks
        mix = self.w_ab.weight - 2 * self.w_diff.weight  # (H, d)
        bt = bvec.transpose(1, 2)  # (B, d, C)
        # rows longest source first: a block of source positions [n0, n1) is computed for
        # the rows with I_b > n0 only (a prefix), not for padding (wiki dev, decode batches
        # of 32: 1.56 -> 1.17 computed / real span pairs); padded positions score 0
        perm = sorted(range(B), key=lambda r: -ilen[r])
        if perm != list(range(B)):
            p = torch.tensor(perm, device=a.device)
            a, per_a, per_b, bt = a[p], per_a[p], per_b[p], bt[p]
            cos = None if cos is None else cos[p]
        rows_by_len = [ilen[r] for r in perm]
        step = max(1, CHUNK // max(1, B * Ls * H * C))
        parts = []
        for n0 in range(0, I, step):
            n1 = min(I, n0 + step)
            k = sum(n > n0 for n in rows_by_len)  # active rows: a prefix
            if k == 0:
                parts.append(a.new_zeros(B, n1 - n0, Ls, C))
                continue
            aw = (a[:k, n0:n1].unsqueeze(-2) * mix).reshape(k, (n1 - n0) * Ls * H, d)
            # per-span terms first, then the bilinear product accumulated into them in place
            # (GEMM with beta = 1) and ReLU in place: one fresh block per step, not four
            h = per_a[:k, n0:n1, ..., None] + per_b[:k]  # (k, n1-n0, Ls, H, C)
            if cos is not None:
                h = h + self.w_cos(cos[:k, n0:n1]).transpose(-1, -2)
            h = h.reshape(k, (n1 - n0) * Ls * H, C).baddbmm_(aw, bt[:k])
            h = h.view(k, n1 - n0, Ls, H, C).relu_()
            part = torch.matmul(self.out.weight[0], h)  # (k, n1-n0, Ls, C)
            if k < B:
                part = torch.cat([part, part.new_zeros(B - k, n1 - n0, Ls, C)], 0)
            parts.append(part)
        pair = torch.cat(parts, 1) + self.out.bias
        if cos is not None:
            pair = pair + self.out_cos(cos).squeeze(-1)
        if perm != list(range(B)):
            pair = pair[torch.argsort(p)]  # the inverse permutation
        return pair

    def emission(self, batch: MonoBatch) -> torch.Tensor:
        """(B, I, Ls, C) emission scores: sparse feature score (NULL features in column 0)
        plus the span-pair and NULL scores of `span_scores`."""
        base = super().emission(batch)
        pair, null = self.span_scores(batch)
        null_col = torch.zeros_like(pair)
        null_col[:, :, 0, 0] = null
        return base.to(pair.dtype) + pair + null_col

    def trainable_groups(self, *, lr: float, sparse_lr: float, encoder_lr: float):
        """AdamW parameter groups: sparse weights (w_emit, w_null, w_trans), the scorer, and
        (fine-tuning) the encoder, each with its own learning rate."""
        sparse = [self.w_emit, self.w_null, self.w_trans]
        enc = list(self.encoder_net.parameters()) if self.finetune else []
        taken = {id(p) for p in sparse + enc}
        rest = [p for p in self.parameters() if id(p) not in taken]
        groups = [{"params": [p for p in sparse if p.requires_grad], "lr": sparse_lr,
                   "weight_decay": 0.0},
                  {"params": rest, "lr": lr}]
        if enc:
            groups.append({"params": enc, "lr": encoder_lr})
        return groups

