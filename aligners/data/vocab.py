"""Word <-> integer id maps of the bitext path: 0 = NULL, 1 = unknown word.

Ids are given in order of first sight, so a vocabulary is a deterministic function of the
token stream. A frozen map (e.g. a loaded model's) sends words it has never seen to UNK.
Saved as a plain JSON list of words (id = position; ids 0 and 1 are the reserved entries).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from aligners.errors import AlignersInputError

__all__ = ["NULL", "UNK", "WordIds"]

NULL = 0
UNK = 1


class _Index(dict):
    """word -> id; looking up a new word gives it the next id (`__missing__`: one hash
    look-up per token in C, a Python call only per new word)."""

    __slots__ = ()

    def __missing__(self, word: str) -> int:
        self[word] = n = len(self)
        return n


class WordIds:
    """Word <-> id map with 0 = NULL and 1 = unknown; frozen maps send new words to UNK.

    Memory O(V) strings; `encode` costs O(tokens) dict look-ups (in C).
    """

    RESERVED = (" <null>", " <unk>")  # contain a space: never a token

    def __init__(self, words: Sequence[str] = ()):
        self.index: dict[str, int] = _Index((w, i) for i, w in enumerate(self.RESERVED))
        for w in words:
            self.add(w)
        self.frozen = False

    @property
    def words(self) -> list[str]:
        """All words by id (ids 0 and 1 are the reserved NULL and unknown entries)."""
        return list(self.index)

    def add(self, word: str) -> int:
        """The id of `word`, added at the end when new (even when frozen)."""
        return self.index.setdefault(word, len(self.index))

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Token ids (L,) int32; new words are added (in order of first sight) unless
        frozen (then -> UNK). `tokens` may be one sentence or a whole flat stream: the
        look-ups run in C (one `map` over the tokens; a Python call per new word only), so
        a long list costs under 0.1 us per token."""
        d = self.index
        ids = map(d.get, tokens, repeat(UNK)) if self.frozen else map(d.__getitem__, tokens)
        return np.array(list(ids), dtype=np.int32)

    def __len__(self) -> int:
        return len(self.index)

    @classmethod
    def from_json(cls, words, *, path: str | None = None, frozen: bool = True) -> WordIds:
        """The map of the word list `words` (`.words`, saved as JSON); raises AlignersInputError
        (naming `path`) when it is not a list of distinct strings starting with the reserved
        entries."""
        if (not isinstance(words, list) or words[:2] != list(cls.RESERVED)
                or not all(isinstance(w, str) for w in words)):
            raise AlignersInputError("expected a JSON list of words starting with the "
                                     "reserved NULL and unknown entries", path=path)
        ids = cls(words[2:])
        if len(ids) != len(words):
            raise AlignersInputError("a word appears twice in the vocabulary", path=path)
        ids.frozen = frozen
        return ids
