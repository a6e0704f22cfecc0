"""Allowed phrases of one language (Bansal et al. 2011, sec. 5): contiguous phrases of length
2..L and gappy word pairs `w1 ? w2` (one gap of any length >= 1), mined from word-HMM
Viterbi alignments, ranked by a discounted probability, pruned to the top N.

Matching is vectorised per batch: a contiguous span is identified by a 64-bit polynomial
hash of its word ids (int64 arithmetic wraps; with ~10^3 listed phrases a false match has
probability ~1e-10 per span), a gappy pair by `w1 * V + w2`. Units: word w has unit w,
contiguous phrase p unit V + p, gappy phrase g unit V + Pc + g.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from aligners.models.gappy_hsmm.config import MAX_PHRASE_LEN, RANK_RULES

__all__ = ["MAX_PHRASE_LEN", "RANK_RULES", "PhraseList", "span_hashes", "phrase_hashes",
           "rank_phrases"]

_MULTIPLIERS = torch.randint(1, 2**62, (MAX_PHRASE_LEN + 1,), dtype=torch.int64,
                             generator=torch.Generator().manual_seed(20110619)) | 1


def span_hashes(words: torch.Tensor, lengths: torch.Tensor, *, length: int) -> tuple:
    """Hashes of all spans of `length` words. words (B, N) long, lengths (B,). Returns
    (hash (B, N-length+1) int64, valid (B, N-length+1) bool); span s covers s..s+length-1.
    Cost O(B N length)."""
    B, N = words.shape
    if length > MAX_PHRASE_LEN:
        raise ValueError(f"phrases of at most {MAX_PHRASE_LEN} words, got {length}")
    R = _MULTIPLIERS.to(words.device)
    W = max(0, N - length + 1)
    h = torch.zeros((B, W), dtype=torch.int64, device=words.device) + R[0] * length
    for k in range(length):
        h = h + (words[:, k:k + W].long() + 1) * R[k + 1]
    valid = torch.arange(W, device=words.device)[None, :] + length <= lengths[:, None]
    return h, valid


def phrase_hashes(rows: torch.Tensor, max_len: int) -> torch.Tensor:
    """(N,) int64 `span_hashes` of each phrase of rows (N, W) (word ids, -1 padded, lengths
    2..max_len; 0 for any other length). Cost O(N max_len)."""
    lens = (rows >= 0).sum(1)
    out = torch.zeros(rows.shape[0], dtype=torch.long, device=rows.device)
    for ln in range(2, max_len + 1):
        sel = (lens == ln).nonzero()[:, 0]
        if sel.numel():
            n = torch.full((sel.numel(),), ln, device=rows.device)
            out[sel] = span_hashes(rows[sel, :ln], n, length=ln)[0][:, 0]
    return out


@dataclass
class PhraseList:
    """Phrases of one language. contiguous (Pc, L) long word ids, -1 padded (length >= 2);
    gappy (Pg, 2) long (first word, last word); n_words V."""

    contiguous: torch.Tensor
    gappy: torch.Tensor
    n_words: int
    max_len: int

    def __post_init__(self):
        self._index = {}

    @property
    def n_contiguous(self) -> int:
        return int(self.contiguous.shape[0])

    @property
    def n_gappy(self) -> int:
        return int(self.gappy.shape[0])

    @property
    def n_units(self) -> int:
        return self.n_words + self.n_contiguous + self.n_gappy

    def _tables(self, device):
        key = str(device)
        if key not in self._index:
            c = self.contiguous.to(device)
            by_len = {}
            lens, hashes = (c >= 0).sum(1), phrase_hashes(c, self.max_len)
            for ln in range(2, self.max_len + 1):
                rows = (lens == ln).nonzero()[:, 0]
                if rows.numel():
                    h = hashes[rows]
                    order = h.argsort()
                    by_len[ln] = (h[order], rows[order])
            gk = self.gappy[:, 0].to(device) * self.n_words + self.gappy[:, 1].to(device)
            order = gk.argsort()
            self._index[key] = (by_len, gk[order], order)
        return self._index[key]

    def match_spans(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, N, L) long: unit of the listed contiguous phrase ending at n with length l+1
        (l >= 1), -1 elsewhere (always -1 for l = 0). Cost O(B N L log Pc)."""
        B, N = words.shape
        out = torch.full((B, N, self.max_len), -1, dtype=torch.long, device=words.device)
        by_len, _, _ = self._tables(words.device)
        for ln, (hs, rows) in by_len.items():
            h, valid = span_hashes(words, lengths, length=ln)
            if h.numel() == 0:
                continue
            pos = torch.searchsorted(hs, h).clamp(max=hs.numel() - 1)
            hit = (hs[pos] == h) & valid
            unit = torch.where(hit, rows[pos] + self.n_words, torch.full_like(pos, -1))
            out[:, ln - 1:, ln - 1] = unit
        return out

    def match_gappy(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, N, N) long: unit of the listed gappy phrase words[a] ? words[c] at [b, a, c]
        (c > a + 1), -1 elsewhere. Cost O(B N^2 log Pg)."""
        B, N = words.shape
        out = torch.full((B, N, N), -1, dtype=torch.long, device=words.device)
        if self.n_gappy == 0:
            return out
        w = words.long()
        ar = torch.arange(N, device=words.device)
        live = ar[None, :] < lengths[:, None]
        # only positions whose word starts / ends a listed pair are candidates (few)
        a_ok = torch.isin(w, self.gappy[:, 0].to(w.device)) & live
        c_ok = torch.isin(w, self.gappy[:, 1].to(w.device)) & live
        ok = a_ok[:, :, None] & c_ok[:, None, :] & (ar[:, None] + 1 < ar[None, :])
        b, a, c = ok.nonzero(as_tuple=True)
        out[b, a, c] = self.gappy_units(words, b, a, c)
        return out

    def gappy_units(self, words: torch.Tensor, b, a, c) -> torch.Tensor:
        """(M,) unit of the listed gappy phrase words[b, a] ? words[b, c] (or -1) per
        instance: `match_gappy(words, ...)[b, a, c]` without its (B,N,N) table. O(M log Pg)."""
        _, gk, order = self._tables(words.device)
        if gk.numel() == 0 or b.numel() == 0:
            return torch.full_like(b, -1)
        w = words.long()
        keys = w[b, a] * self.n_words + w[b, c]
        pos = torch.searchsorted(gk, keys).clamp(max=gk.numel() - 1)
        return torch.where(gk[pos] == keys, order[pos] + self.n_words + self.n_contiguous,
                           torch.full_like(pos, -1))


def rank_phrases(rows: torch.Tensor, aligned, total, *, top: int, discount: float,
                 min_count: int = 1, rule: str = "probability") -> torch.Tensor:
    """The rows of the top `top` mined candidates rows (N, W) (word ids, -1 padded).
    aligned / total (N,): the counts of the instances aligned to one state / of all
    occurrences. Only candidates with total >= `min_count` (and >= 1) and aligned >
    `discount` are ranked. rule "probability" (the paper, sec. 5): by the discounted
    probability (aligned - discount) / total, ties by aligned count; rule "count": by the
    discounted aligned count aligned - discount, ties by the probability. Then by the
    phrase itself (a shorter phrase before the longer one it begins). Cost O(N log N)."""
    a, t = np.asarray(aligned, dtype=np.int64), np.asarray(total, dtype=np.int64)
    keep = np.nonzero((t > 0) & (t >= min_count) & (a - discount > 0))[0]
    a, t, words = a[keep], t[keep], rows[torch.from_numpy(keep)].numpy()
    p = (a - discount) / t
    first, second = (p, a) if rule == "probability" else (a - discount, p)
    order = np.lexsort((*words.T[::-1], -second, -first))[:top]
    return rows[torch.from_numpy(keep[order])]
