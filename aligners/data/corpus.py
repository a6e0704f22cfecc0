"""Integer-encoded parallel corpora as flat numpy arrays, and length-bucketed padded batches.

A `ParallelCorpus` holds, per side, `ids` (int32, all tokens of all sentences concatenated)
and `offsets` (int64, N + 1): sentence n is `ids[offsets[n]:offsets[n + 1]]`. It is built
in one streaming pass (ids assigned on first sight, frequency cut applied afterwards by a
vectorised remap), saved as `.npy` files + vocabulary JSON, and loaded with
`np.load(mmap_mode="r")`, so a corpus of millions of pairs never lives as Python strings.
Normalisation (lowercasing, ASCII-only splitting) is an explicit argument, stored in
`meta.json`. Empty sentences are kept (length 0).
"""

from __future__ import annotations

import itertools
import json
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from aligners.data.encode import encode_parallel_files
from aligners.data.vocab import PAD_ID, Vocab
from aligners.errors import AlignersInputError

__all__ = ["Batch", "ParallelCorpus", "bucket_batches", "encode_side"]

_CHUNK = 8192  # pairs encoded per step
_FILES = ("src_ids", "src_offsets", "tgt_ids", "tgt_offsets")


@dataclass(frozen=True)
class Batch:
    """A padded batch. `src (B, I)`, `tgt (B, J)` long ids with PAD_ID = 0 in padding;
    `src_mask (B, I)` / `tgt_mask (B, J)` bool, True on real tokens; `src_lengths (B,)`,
    `tgt_lengths (B,)` long; `index (B,)` long = positions of the pairs in the corpus."""

    src: torch.Tensor
    tgt: torch.Tensor
    src_mask: torch.Tensor
    tgt_mask: torch.Tensor
    src_lengths: torch.Tensor
    tgt_lengths: torch.Tensor
    index: torch.Tensor

    def to(self, device: torch.device | str) -> Batch:
        return Batch(*(getattr(self, f).to(device) for f in self.__dataclass_fields__))


def _pad(ids: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, ...]:
    """Gather sentences `index` into a (B, L) int64 array (vectorised). Cost: O(B * L)."""
    starts = offsets[index]
    lengths = (offsets[index + 1] - starts).astype(np.int64)
    width = int(lengths.max()) if len(index) else 0
    cols = np.arange(width, dtype=np.int64)
    mask = cols[None, :] < lengths[:, None]
    pos = np.where(mask, starts[:, None] + cols[None, :], 0)
    out = np.where(mask, ids[pos] if len(ids) else 0, PAD_ID).astype(np.int64)
    return out, mask, lengths


class _SideEncoder:
    """One-pass encoder: provisional ids on first sight, frequency cut applied in `finish`."""

    def __init__(self) -> None:
        self.first: defaultdict[str, int] = defaultdict()
        self.first.default_factory = self.first.__len__  # new token -> next provisional id
        self.ids = array("i")
        self.offsets = array("q", [0])
        self.total = 0

    def feed(self, sentences: list[list[str]]) -> None:
        """Append a chunk of tokenised sentences (flat C-level mapping, no per-token Python)."""
        self.ids.extend(map(self.first.__getitem__, itertools.chain.from_iterable(sentences)))
        ends = itertools.accumulate(map(len, sentences), initial=self.total)
        next(ends)
        self.offsets.extend(ends)
        self.total = self.offsets[-1]

    def finish(
        self, vocab: Vocab | None, *, min_count: int, max_size: int | None
    ) -> tuple[np.ndarray, np.ndarray, Vocab]:
        raw = np.frombuffer(self.ids, dtype=np.int32) if self.total else np.zeros(0, np.int32)
        tokens = list(self.first)  # in provisional-id order
        if vocab is None:
            counts = np.bincount(raw, minlength=len(tokens)) if self.total else np.zeros(0)
            vocab = Vocab.from_counts(dict(zip(tokens, counts.tolist(), strict=True)),
                                      min_count=min_count, max_size=max_size)
        enc = vocab.lookup_table(tokens)[raw] if self.total else np.zeros(0, np.int32)
        offsets = np.frombuffer(self.offsets, dtype=np.int64).copy()
        return enc.astype(np.int32, copy=False), offsets, vocab


def encode_side(
    sentences: Iterable[list[str]], *, min_count: int = 1, max_size: int | None = None,
    vocab: Vocab | None = None,
) -> tuple[np.ndarray, np.ndarray, Vocab]:
    """Encode one side -> `(ids int32, offsets int64 (N + 1,), vocab)` in one pass.

    With `vocab=None` a vocabulary is built (count >= `min_count`, `max_size` most frequent;
    cut tokens -> UNK_ID); otherwise tokens missing from `vocab` become UNK_ID.
    Cost: O(tokens) time; memory O(tokens) int32 + O(V) strings.
    """
    enc = _SideEncoder()
    it = iter(sentences)
    while chunk := list(itertools.islice(it, _CHUNK)):
        enc.feed(chunk)
    return enc.finish(vocab, min_count=min_count, max_size=max_size)


class ParallelCorpus:
    """A memory-light, integer-encoded parallel corpus (see the module docstring)."""

    def __init__(self, src_ids, src_offsets, tgt_ids, tgt_offsets, src_vocab: Vocab,
                 tgt_vocab: Vocab, meta: dict | None = None):
        if len(src_offsets) != len(tgt_offsets):
            raise AlignersInputError(
                f"{len(src_offsets) - 1} source but {len(tgt_offsets) - 1} target sentences"
            )
        self.src_ids, self.src_offsets = src_ids, src_offsets
        self.tgt_ids, self.tgt_offsets = tgt_ids, tgt_offsets
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.meta = dict(meta or {})

    # --- construction -------------------------------------------------------------------
    @classmethod
    def from_pairs(
        cls,
        pairs: Iterable[tuple[list[str], list[str]]],
        *,
        min_count: int = 1,
        max_size: int | None = None,
        src_vocab: Vocab | None = None,
        tgt_vocab: Vocab | None = None,
        meta: dict | None = None,
    ) -> ParallelCorpus:
        """Encode a stream of `(source_tokens, target_tokens)` in one pass. Cost: O(tokens).

        Vocabularies are built (frequency cut `min_count`, `max_size`) unless given.
        """
        src_enc, tgt_enc = _SideEncoder(), _SideEncoder()
        it = iter(pairs)
        while chunk := list(itertools.islice(it, _CHUNK)):
            src_enc.feed([s for s, _ in chunk])
            tgt_enc.feed([t for _, t in chunk])
        s_ids, s_off, s_voc = src_enc.finish(src_vocab, min_count=min_count, max_size=max_size)
        t_ids, t_off, t_voc = tgt_enc.finish(tgt_vocab, min_count=min_count, max_size=max_size)
        meta = {"min_count": min_count, "max_size": max_size, **(meta or {})}
        return cls(s_ids, s_off, t_ids, t_off, s_voc, t_voc, meta)

    @classmethod
    def build(
        cls,
        src: str | Path,
        tgt: str | Path | None = None,
        *,
        lowercase: bool = False,
        ascii_split: bool = False,
        min_count: int = 1,
        max_size: int | None = None,
        src_vocab: Vocab | None = None,
        tgt_vocab: Vocab | None = None,
        extra_pairs: Iterable[tuple[list[str], list[str]]] | None = None,
    ) -> ParallelCorpus:
        """Encode two files, or one `src ||| tgt` file, streamed block by block.

        `extra_pairs` (tokenised pairs, e.g. `load("hansards-enfr", "test")` as
        `(p.src, p.tgt)`) are appended after the file's pairs, sharing the vocabularies.

        Same tokens as `read_parallel(src, tgt, lowercase=..., ascii_split=...)`, encoded by
        `encode_parallel_files` (one C-level split per block; text with U+0000/U+0001 is
        rejected). Cost: O(total size), one pass per file.
        """
        arrays = encode_parallel_files(
            src, tgt, lowercase=lowercase, ascii_split=ascii_split, min_count=min_count,
            max_size=max_size, src_vocab=src_vocab, tgt_vocab=tgt_vocab,
            extra_pairs=extra_pairs,
        )
        meta = {"lowercase": lowercase, "ascii_split": ascii_split, "min_count": min_count,
                "max_size": max_size, "src": str(src), "tgt": None if tgt is None else str(tgt)}
        return cls(*arrays, meta)

    # --- persistence --------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        """Write `src_ids.npy` ... `tgt_offsets.npy`, `{src,tgt}_vocab.json`, `meta.json`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in _FILES:
            np.save(folder / f"{name}.npy", np.ascontiguousarray(getattr(self, name)))
        self.src_vocab.save(folder / "src_vocab.json")
        self.tgt_vocab.save(folder / "tgt_vocab.json")
        (folder / "meta.json").write_text(json.dumps({"format": "aligners.corpus/1", **self.meta}))

    @classmethod
    def load(cls, folder: str | Path, *, mmap: bool = True) -> ParallelCorpus:
        """Open a saved corpus; arrays are memory-mapped read-only when `mmap`."""
        folder = Path(folder)
        missing = [n for n in (*(f"{x}.npy" for x in _FILES), "meta.json") if
                   not (folder / n).exists()]
        if missing:
            raise AlignersInputError(f"not a saved corpus: missing {missing}", path=str(folder))
        arrays = [np.load(folder / f"{n}.npy", mmap_mode="r" if mmap else None,
                          allow_pickle=False) for n in _FILES]
        meta = json.loads((folder / "meta.json").read_text())
        meta.pop("format", None)
        return cls(*arrays, Vocab.load(folder / "src_vocab.json"),
                   Vocab.load(folder / "tgt_vocab.json"), meta)

    # --- access -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.src_offsets) - 1

    def __getitem__(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Pair n as two int32 id arrays (views, no copy)."""
        if not -len(self) <= n < len(self):
            raise IndexError(n)
        n %= len(self)
        return (self.src_ids[self.src_offsets[n]:self.src_offsets[n + 1]],
                self.tgt_ids[self.tgt_offsets[n]:self.tgt_offsets[n + 1]])

    def pair_tokens(self, n: int) -> tuple[list[str], list[str]]:
        """Pair n decoded back to strings (UNK for cut tokens)."""
        s, t = self[n]
        return self.src_vocab.decode(s), self.tgt_vocab.decode(t)

    @property
    def src_lengths(self) -> np.ndarray:
        return np.diff(self.src_offsets)

    @property
    def tgt_lengths(self) -> np.ndarray:
        return np.diff(self.tgt_offsets)

    def collate(self, index: Iterable[int]) -> Batch:
        """Pad pairs `index` into a `Batch` (vectorised). Cost: O(B * (I + J))."""
        idx = np.asarray(list(index) if not isinstance(index, np.ndarray) else index, np.int64)
        src, smask, slen = _pad(self.src_ids, self.src_offsets, idx)
        tgt, tmask, tlen = _pad(self.tgt_ids, self.tgt_offsets, idx)
        return Batch(torch.from_numpy(src), torch.from_numpy(tgt), torch.from_numpy(smask),
                     torch.from_numpy(tmask), torch.from_numpy(slen), torch.from_numpy(tlen),
                     torch.from_numpy(idx))

    def batches(
        self,
        *,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        shuffle: bool = False,
        generator: torch.Generator | None = None,
    ) -> Iterator[Batch]:
        """Length-bucketed padded batches covering every pair once (see `bucket_batches`)."""
        for index in bucket_batches(self.src_lengths, self.tgt_lengths, batch_size=batch_size,
                                    max_tokens=max_tokens, shuffle=shuffle, generator=generator):
            yield self.collate(index)


def bucket_batches(
    src_lengths: np.ndarray,
    tgt_lengths: np.ndarray,
    *,
    batch_size: int | None = None,
    max_tokens: int | None = None,
    shuffle: bool = False,
    generator: torch.Generator | None = None,
) -> list[np.ndarray]:
    """Split pair indices into batches of similar lengths; every index appears exactly once.

    Pairs are sorted by (source length, target length) (ties in random order when
    `shuffle`), then cut into batches of at most `batch_size` pairs and, with `max_tokens`,
    at most `max_tokens` padded cells `B * max(I, J)` (a single longer pair still forms a
    batch). With `shuffle` the batch order is permuted by `generator`. Usable as a
    `DataLoader(range(N), batch_sampler=..., collate_fn=corpus.collate)`. Cost: O(N log N).
    """
    if batch_size is None and max_tokens is None:
        raise AlignersInputError("give batch_size, max_tokens or both")
    if (batch_size is not None and batch_size < 1) or (max_tokens is not None and max_tokens < 1):
        raise AlignersInputError("batch_size and max_tokens must be positive")
    slen = np.asarray(src_lengths, np.int64)
    tlen = np.asarray(tgt_lengths, np.int64)
    n = len(slen)
    if shuffle:
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        tie = torch.randperm(n, generator=gen).numpy()
    else:
        tie = np.arange(n)
    order = np.lexsort((tie, tlen, slen))
    width = np.maximum(slen, tlen)[order]
    batches: list[np.ndarray] = []
    start = 0
    cap = batch_size if batch_size is not None else n
    while start < n:
        stop = min(start + cap, n)
        if max_tokens is not None:
            # width is non-decreasing only in slen; use the running max within the candidate
            run = np.maximum.accumulate(width[start:stop])
            fits = run * np.arange(1, stop - start + 1) <= max_tokens
            k = int(np.argmin(fits)) if not fits.all() else stop - start
            stop = start + max(k, 1)
        batches.append(order[start:stop])
        start = stop
    if shuffle:
        perm = torch.randperm(len(batches), generator=gen).tolist()
        batches = [batches[i] for i in perm]
    return batches
