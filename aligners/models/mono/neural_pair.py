"""Cross-sentence word vectors for the neural aligner: both sentences in ONE encoder pass.

`pair_vectors(embedder, pairs)` -> per pair (src (I, D), tgt (J, D)) unit-norm word vectors
from encoding `[CLS] src [SEP] tgt [SEP]` (token type 0 / 1), so that every word's vector
attends to the other sentence (the cross-sentence encoding of Lan, Jiang & Xu 2021). A word
is the mean of its pieces' last hidden states (`embedding.word_means`, as `MiniLMEmbedder`);
words cut off by the encoder's piece limit (`embedder.max_pieces`, longest sentence
truncated first) get 0. Pairs are encoded in length-sorted batches of `embedder.batch_size`;
differentiable when gradients are enabled (fine-tuning). `PairMemo` memoises frozen pair
vectors per pair. Cost: one encoder pass over I + J pieces per pair (attention O((I + J)^2)).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aligners.features.embedding import word_means

__all__ = ["pair_vectors", "PairMemo"]


def pair_vectors(embedder, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], *,
                 batch_size: int | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(src_vec (I, D), tgt_vec (J, D)) per (src, tgt) pair on the encoder's device, in
    batches of `batch_size` pairs (default `embedder.batch_size`)."""
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
    """Frozen pair vectors on the CPU, memoised per (src, tgt) pair."""

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
