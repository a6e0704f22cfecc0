"""Vocabularies: token string <-> integer id, with a frequency cut, saved as JSON.

Ids 0 and 1 are reserved: `PAD` (padding, never a real token) and `UNK` (tokens cut by
frequency or unseen). Real tokens get ids 2.. in order of decreasing count, ties broken by
the token string, so a vocabulary is a deterministic function of the counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from aligners.errors import AlignersInputError

__all__ = ["PAD", "PAD_ID", "UNK", "UNK_ID", "Vocab"]

PAD, UNK = "<pad>", "<unk>"
PAD_ID, UNK_ID = 0, 1


class Vocab:
    """An immutable token <-> id map. `len(vocab)` counts PAD and UNK.

    >>> v = Vocab.from_counts({"a": 3, "b": 1, "c": 3}, min_count=2)
    >>> v.itos, v.encode(["c", "b"])
    (['<pad>', '<unk>', 'a', 'c'], [3, 1])
    """

    def __init__(self, tokens: Sequence[str], counts: Sequence[int] | None = None):
        """`tokens` are the real tokens in id order (ids 2..); `counts` their frequencies."""
        self.itos: list[str] = [PAD, UNK, *tokens]
        # PAD is never the id of a text token: a literal "<pad>" in the text encodes as UNK
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos) if i != PAD_ID}
        if len(self.stoi) != len(self.itos) - 1:
            dup = next(t for i, t in enumerate(self.itos) if i and self.stoi[t] != i)
            raise AlignersInputError(f"token {dup!r} appears twice in the vocabulary")
        self.counts: list[int] = [0, 0, *(counts if counts is not None else [0] * len(tokens))]
        if len(self.counts) != len(self.itos):
            raise AlignersInputError("counts and tokens differ in length")

    @classmethod
    def from_counts(
        cls, counts: Mapping[str, int], *, min_count: int = 1, max_size: int | None = None
    ) -> Vocab:
        """Keep tokens with count >= `min_count`, the `max_size` most frequent at most
        (not counting PAD/UNK). Cost: O(V log V)."""
        items = sorted(
            ((t, c) for t, c in counts.items() if c >= min_count and t not in (PAD, UNK)),
            key=lambda tc: (-tc[1], tc[0]),
        )
        if max_size is not None:
            items = items[:max_size]
        return cls([t for t, _ in items], [c for _, c in items])

    @classmethod
    def build(
        cls,
        sentences: Iterable[Iterable[str]],
        *,
        min_count: int = 1,
        max_size: int | None = None,
    ) -> Vocab:
        """Count tokens over `sentences` (streamed) and cut. Cost: O(tokens)."""
        counter: Counter[str] = Counter()
        for sent in sentences:
            counter.update(sent)
        return cls.from_counts(counter, min_count=min_count, max_size=max_size)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and (self.itos, self.counts) == (other.itos, other.counts)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} ids)"

    def id(self, token: str) -> int:
        """The id of `token`, UNK_ID when absent."""
        return self.stoi.get(token, UNK_ID)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids of `tokens` (UNK_ID for unknown ones). Cost: O(len)."""
        get = self.stoi.get
        return [get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of `ids`; out-of-range ids raise `AlignersInputError`."""
        try:
            return [self.itos[int(i)] for i in ids]
        except IndexError:
            raise AlignersInputError(f"id outside the vocabulary of {len(self)}") from None

    def lookup_table(self, tokens: Sequence[str]) -> np.ndarray:
        """int32 array mapping positions in `tokens` to ids here (UNK_ID when absent)."""
        return np.fromiter((self.stoi.get(t, UNK_ID) for t in tokens), np.int32, len(tokens))

    def to_json(self) -> dict:
        return {"format": "aligners.vocab/1", "tokens": self.itos[2:], "counts": self.counts[2:]}

    @classmethod
    def from_json(cls, obj: dict, *, path: str | None = None) -> Vocab:
        if not isinstance(obj, dict) or obj.get("format") != "aligners.vocab/1":
            raise AlignersInputError("expected an aligners.vocab/1 JSON object", path=path)
        return cls(obj["tokens"], obj.get("counts"))

    def save(self, path: str | Path) -> None:
        """Write as JSON (UTF-8, one object)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False)

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        """Read a vocabulary saved by `save`."""
        try:
            with open(path, encoding="utf-8-sig") as f:
                obj = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise AlignersInputError(f"cannot read vocabulary: {err}", path=str(path)) from None
        return cls.from_json(obj, path=str(path))
