"""Plain containers shared by readers, metrics and models. Indices are 0-based."""

from dataclasses import dataclass, field

__all__ = ["Link", "Alignment", "AlignedPair"]

Link = tuple[int, int]  # (source_index, target_index), 0-based


@dataclass(frozen=True)
class Alignment:
    """The links of one sentence pair. `possible` always contains `sure` (S ⊆ P).

    `posteriors` optionally maps a link to its probability (Pharaoh `i-j:p`).
    """

    sure: frozenset[Link] = frozenset()
    possible: frozenset[Link] = frozenset()
    posteriors: dict[Link, float] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sure", frozenset(self.sure))
        object.__setattr__(self, "possible", frozenset(self.possible) | frozenset(self.sure))

    def links(self) -> list[tuple[int, int, bool]]:
        """Sorted `(source, target, is_sure)` triples, each link once."""
        return sorted((i, j, (i, j) in self.sure) for i, j in self.possible)

    def __len__(self) -> int:
        return len(self.possible)


@dataclass(frozen=True)
class AlignedPair:
    """A sentence pair with its (optional) gold or predicted alignment.

    `src`/`tgt` are token tuples; which language is "source" is fixed by the reader
    (and stated by the dataset registry). `id` is the dataset's own pair id, if any.
    """

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    alignment: Alignment | None = None
    id: str | None = None
