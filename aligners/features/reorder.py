"""Phrase-pair features for reordering classifiers (Alrajeh & Niranjan 2014, EMNLP Table 1).

A phrase pair is a bag of sparse counts: one per aligned word pair inside it
(`source&target`) and the source words beside the source span (`L:word`, `R:word`, `<s>` /
`</s>` at the boundaries). Features are int64 codes; a vocabulary keeps those seen at least
`min_count` times in training and maps them to CSR columns (exported as JSON triples).
"""

import hashlib
import warnings
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from aligners.errors import AlignersInputError
from aligners.phrases import PhrasePair, iter_extract

__all__ = [
    "RawExamples",
    "ReorderFeaturizer",
    "phrase_key",
    "collect_examples",
    "iter_phrase_strings",
    "fit_feature_vocab",
    "to_csr",
    "csr_to_torch",
]

_ID_BITS = 24
_PAIR, _LEFT, _RIGHT = 0, 1, 2


def phrase_key(src_phrase: str, tgt_phrase: str) -> int:
    """A stable signed 64-bit key of the phrase pair strings (blake2b), for the lexical table."""
    digest = hashlib.blake2b(f"{src_phrase}\x00{tgt_phrase}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


class ReorderFeaturizer:
    """Word vocabularies and the code <-> feature mapping (kind, source word, target word).

    Codes: `kind << 50 | src_id << 24 | tgt_id` with kind 0 = aligned pair, 1 = left
    context, 2 = right context. `grow=False` maps unknown words to no feature.
    """

    def __init__(self, *, context: bool = True):
        self.context = context
        self.src_vocab: dict[str, int] = {"<s>": 0, "</s>": 1}  # word -> id, in id order
        self.tgt_vocab: dict[str, int] = {}

    @staticmethod
    def _ids(words: Sequence[str], vocab: dict, grow: bool) -> list[int]:
        out = []
        for w in words:
            if grow and w not in vocab:
                if len(vocab) >= 1 << _ID_BITS:
                    raise AlignersInputError("vocabulary exceeds 2^24 words")
                vocab[w] = len(vocab)
            out.append(vocab.get(w, -1))
        return out

    def sentence_ids(self, src, tgt, *, grow: bool = True) -> tuple[list[int], list[int]]:
        """Word ids of one sentence pair (-1 for unknown words when `grow` is False)."""
        return self._ids(src, self.src_vocab, grow), self._ids(tgt, self.tgt_vocab, grow)

    def codes(self, src_ids, tgt_ids, to_src: list[list[int]], pair: PhrasePair) -> list[int]:
        """Feature codes of one phrase pair (a bag: repeats allowed). Cost O(links inside)."""
        out = []
        for j in range(pair.tgt_start, pair.tgt_end):
            t = tgt_ids[j]
            for i in to_src[j]:
                s = src_ids[i]
                if s >= 0 and t >= 0:
                    out.append((s << _ID_BITS) | t)
        if self.context:
            left = src_ids[pair.src_start - 1] if pair.src_start > 0 else 0
            right = src_ids[pair.src_end] if pair.src_end < len(src_ids) else 1
            if left >= 0:
                out.append((_LEFT << 50) | (left << _ID_BITS))
            if right >= 0:
                out.append((_RIGHT << 50) | (right << _ID_BITS))
        return out

    def describe(self, codes: np.ndarray) -> list[list]:
        """`[kind, source word, target word or None]` for each code (JSON-ready)."""
        src_words, tgt_words, out = list(self.src_vocab), list(self.tgt_vocab), []
        for c in np.asarray(codes, dtype=np.int64).tolist():
            kind, s, t = c >> 50, (c >> _ID_BITS) & ((1 << 26) - 1), c & ((1 << _ID_BITS) - 1)
            name = ("pair", "left", "right")[kind]
            out.append([name, src_words[s], tgt_words[t] if kind == _PAIR else None])
        return out

    @classmethod
    def from_described(cls, described: list[list], *, context: bool = True):
        """Rebuild a frozen featurizer and the sorted codes of an exported feature list."""
        feat = cls(context=context)
        codes = []
        for name, s, t in described:
            kind = {"pair": _PAIR, "left": _LEFT, "right": _RIGHT}[name]
            (si,), ti = feat.sentence_ids([s], [t] if kind == _PAIR else [])
            codes.append((kind << 50) | (si << _ID_BITS) | (ti[0] if ti else 0))
        return feat, np.asarray(codes, dtype=np.int64)


@dataclass
class RawExamples:
    """Phrase-pair examples before feature selection. E examples, Z codes in all.

    `codes[indptr[e]:indptr[e+1]]` are example e's feature codes; `labels` (E,) int64 class
    ids (backward or forward orientation); `sentence` (E,) the sentence pair index;
    `keys` (E,) phrase_key of the pair (for the lexical model).
    """

    codes: np.ndarray
    indptr: np.ndarray
    labels: np.ndarray
    sentence: np.ndarray
    keys: np.ndarray
    n_sentences: int

    def __len__(self) -> int:
        return len(self.labels)


def collect_examples(
    corpus: Iterable[tuple[Sequence[str], Sequence[str], Iterable[tuple[int, int]]]],
    featurizer: ReorderFeaturizer,
    *,
    max_length: int = 7,
    mode: str = "wbe",
    direction: str = "backward",
    grow: bool = True,
) -> RawExamples:
    """Stream the corpus once: extract phrase pairs, encode features, keys and labels.

    Memory: the flat int64 arrays only (about 8 bytes per feature occurrence), never the
    phrase table as Python objects. Cost: extraction + O(features) per phrase pair.
    """
    if direction not in ("backward", "forward"):
        raise AlignersInputError(f"direction {direction!r}; expected backward or forward")
    fwd = direction == "forward"
    codes, indptr, labels = array("q"), array("q", [0]), array("b")
    sentence, keys = array("i"), array("q")
    n_sent = 0
    for n, src, tgt, links, pairs in iter_extract(corpus, max_length=max_length, mode=mode):
        n_sent = n + 1
        if not pairs:
            continue
        src_ids, tgt_ids = featurizer.sentence_ids(src, tgt, grow=grow)
        to_src: list[list[int]] = [[] for _ in tgt]
        for i, j in sorted(set(links)):
            to_src[j].append(i)
        for p in pairs:
            codes.extend(featurizer.codes(src_ids, tgt_ids, to_src, p))
            indptr.append(len(codes))
            labels.append(p.forward if fwd else p.backward)
            sentence.append(n)
            keys.append(
                phrase_key(" ".join(src[p.src_start:p.src_end]),
                           " ".join(tgt[p.tgt_start:p.tgt_end]))
            )
    return RawExamples(
        codes=np.frombuffer(codes, dtype=np.int64).copy(),
        indptr=np.frombuffer(indptr, dtype=np.int64).copy(),
        labels=np.frombuffer(labels, dtype=np.int8).astype(np.int64),
        sentence=np.frombuffer(sentence, dtype=np.int32).copy(),
        keys=np.frombuffer(keys, dtype=np.int64).copy(),
        n_sentences=n_sent,
    )


def iter_phrase_strings(corpus, *, max_length: int = 7, mode: str = "wbe"):
    """Stream `(src phrase, tgt phrase, phrase_key)` for every extracted phrase pair."""
    for _, src, tgt, _, pairs in iter_extract(corpus, max_length=max_length, mode=mode):
        for p in pairs:
            s = " ".join(src[p.src_start:p.src_end])
            t = " ".join(tgt[p.tgt_start:p.tgt_end])
            yield s, t, phrase_key(s, t)


def _rows_codes(raw: RawExamples, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the selected rows and their (new) indptr. Cost O(their codes)."""
    lens = raw.indptr[rows + 1] - raw.indptr[rows]
    new_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_ptr[1:])
    if len(rows) and np.all(np.diff(rows) == 1):  # contiguous: a view
        return raw.codes[raw.indptr[rows[0]]:raw.indptr[rows[-1] + 1]], new_ptr
    starts = np.repeat(raw.indptr[rows] - new_ptr[:-1], lens)
    return raw.codes[np.arange(new_ptr[-1]) + starts], new_ptr


def fit_feature_vocab(raw: RawExamples, rows: np.ndarray, *, min_count: int = 10) -> np.ndarray:
    """Sorted codes that occur at least `min_count` times in `rows` (training rows only)."""
    codes, _ = _rows_codes(raw, rows)
    uniq, counts = np.unique(codes, return_counts=True)
    return uniq[counts >= min_count]


def to_csr(raw: RawExamples, rows: np.ndarray, vocab: np.ndarray) -> sp.csr_matrix:
    """(len(rows), F) float32 count matrix over the kept codes `vocab` (sorted)."""
    codes, ptr = _rows_codes(raw, rows)
    if len(vocab) == 0:
        return sp.csr_matrix((len(rows), 0), dtype=np.float32)
    col = np.searchsorted(vocab, codes).clip(max=len(vocab) - 1)
    keep = vocab[col] == codes
    indices = col[keep].astype(np.int32)
    del col
    # rows stay in order: the new indptr counts the kept codes before each row start
    kept_before = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    indptr = kept_before[ptr]
    del keep, kept_before
    mat = sp.csr_matrix(
        (np.ones(len(indices), dtype=np.float32), indices, indptr),
        shape=(len(rows), len(vocab)),
    )
    mat.sum_duplicates()  # repeated features become counts; sorts the indices
    return mat


def csr_to_torch(mat: sp.csr_matrix, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A scipy CSR matrix as a `torch.sparse_csr_tensor` (shares no memory)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            torch.from_numpy(mat.indptr.astype(np.int64)),
            torch.from_numpy(mat.indices.astype(np.int64)),
            torch.from_numpy(mat.data).to(dtype, copy=True),
            size=mat.shape,
            check_invariants=False,  # built by scipy: sorted, in range
        )
