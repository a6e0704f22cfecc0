"""Pharaoh alignments: one line per sentence pair, 0-based source-target links: `i-j` sure,
`i?j` possible (`ipj` accepted on input), `i-j:p` / `i?j:p` with a posterior p in [0, 1]
(written with 6 significant digits, `:.6g`).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

from aligners.data.parallel import read_lines, write_lines
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

__all__ = [
    "OutOfRangeLinksWarning",
    "bounds_text",
    "check_pair_ranges",
    "check_ranges",
    "format_pharaoh",
    "link_line",
    "parse_pharaoh_line",
    "read_pharaoh",
    "warn_dropped",
    "write_pharaoh",
]

_LINK = re.compile(r"(\d+)([-?p])(\d+)(?::(\S+))?\Z")


class OutOfRangeLinksWarning(UserWarning):
    """Emitted when a lenient reader drops links outside their sentence (`.dropped` = count)."""

    def __init__(self, message: str, dropped: int):
        super().__init__(message)
        self.dropped = dropped


def parse_pharaoh_line(
    text: str, *, path: str | Path | None = None, line: int | None = None
) -> Alignment:
    """Parse one Pharaoh line into an `Alignment`. Cost: O(len(text)).

    Sure wins when a link appears both sure and possible. Malformed tokens (not
    `i-j`, `i?j`, `ipj`, optionally with `:p`, p a probability) raise `AlignersInputError`
    naming `path`, `line`, the token and its 1-based position on the line.
    """
    sure: set[tuple[int, int]] = set()
    possible: set[tuple[int, int]] = set()
    posts: dict[tuple[int, int], float] = {}
    where = None if path is None else str(path)
    for k, tok in enumerate(text.split(), start=1):
        m = _LINK.match(tok)
        if m is None:
            raise AlignersInputError(
                f"malformed link {tok!r} (token {k}); expected 'i-j', 'i?j', 'ipj' or 'i-j:p' "
                "with non-negative integers i, j",
                path=where,
                line=line,
            )
        link = (int(m.group(1)), int(m.group(3)))
        (sure if m.group(2) == "-" else possible).add(link)
        if m.group(4) is not None:
            try:
                p = float(m.group(4))
            except ValueError:
                p = math.nan
            if not (0.0 <= p <= 1.0):  # also rejects NaN
                raise AlignersInputError(
                    f"malformed posterior in {tok!r} (token {k}); expected a probability in [0, 1]",
                    path=where,
                    line=line,
                )
            posts[link] = p
    return Alignment(frozenset(sure), frozenset(possible), posts or None)


def check_ranges(
    alignments: list[Alignment],
    src_lengths: Sequence[int] | None,
    tgt_lengths: Sequence[int] | None,
    *,
    lenient: bool = False,
    path: str | Path | None = None,
    line_numbers: Sequence[int] | None = None,
) -> tuple[list[Alignment], int]:
    """Check every link lies inside its sentence; return `(alignments, dropped)`.

    `src_lengths[n]`/`tgt_lengths[n]` bound pair n (either may be None = unchecked).
    A link with source index >= I or target index >= J is an error naming the file and
    line (`line_numbers[n]`, default n + 1), or with `lenient=True` it is dropped and counted
    (the caller warns). Cost: O(number of links).
    """
    where = None if path is None else str(path)
    for name, lengths in (("source", src_lengths), ("target", tgt_lengths)):
        if lengths is not None and len(lengths) != len(alignments):
            raise AlignersInputError(
                f"{len(alignments)} alignments but {len(lengths)} {name} sentences; "
                "expected one alignment per sentence pair",
                path=where,
            )
    if src_lengths is None and tgt_lengths is None:
        return alignments, 0
    out: list[Alignment] = []
    dropped = 0
    for n, al in enumerate(alignments):
        src_n = None if src_lengths is None else src_lengths[n]
        tgt_n = None if tgt_lengths is None else tgt_lengths[n]

        def inside(link: tuple[int, int], src_n=src_n, tgt_n=tgt_n) -> bool:
            return (src_n is None or link[0] < src_n) and (tgt_n is None or link[1] < tgt_n)

        bad = sorted(link for link in al.possible if not inside(link))
        if bad and not lenient:
            i, j = bad[0]
            raise AlignersInputError(
                f"link ({i}, {j}) (0-based source-target) lies outside the sentence pair of "
                f"{bounds_text(src_n, tgt_n)} (use lenient/--lenient to drop such links)",
                path=where,
                line=line_numbers[n] if line_numbers is not None else n + 1,
            )
        if bad:
            dropped += len(bad)
            posts = None if al.posteriors is None else (
                {k: v for k, v in al.posteriors.items() if inside(k)} or None)
            al = Alignment(frozenset(filter(inside, al.sure)),
                           frozenset(filter(inside, al.possible)), posts)
        out.append(al)
    return out, dropped


def check_pair_ranges(pairs: list[AlignedPair], *, lenient: bool, path: str,
                      line_numbers: Sequence[int] | None = None,
                      target: bool = True) -> list[AlignedPair]:
    """`check_ranges` of pairs that carry their text (against their token counts; `target`
    False: the source side only), with the dropped links warned about (`warn_dropped`)."""
    als, dropped = check_ranges(
        [p.alignment for p in pairs], [len(p.src) for p in pairs],
        [len(p.tgt) for p in pairs] if target else None,
        lenient=lenient, path=path, line_numbers=line_numbers)
    warn_dropped(dropped, path)
    if not dropped:
        return pairs
    return [AlignedPair(p.src, p.tgt, al, p.id) for p, al in zip(pairs, als, strict=True)]


def bounds_text(src_n: int | None, tgt_n: int | None) -> str:
    """`'I source and J target words; expected 0 <= i < I and 0 <= j < J'`, leaving out a
    side whose length is unknown (None)."""
    words = [f"{n} {side}" for n, side in ((src_n, "source"), (tgt_n, "target")) if n is not None]
    ranges = [f"0 <= {v} < {n}" for n, v in ((src_n, "i"), (tgt_n, "j")) if n is not None]
    return f"{' and '.join(words)} words; expected {' and '.join(ranges)}"


def warn_dropped(dropped: int, path: str | Path | None) -> None:
    """Warn (once per file) that `dropped` out-of-range links were removed."""
    if dropped:
        warnings.warn(
            OutOfRangeLinksWarning(
                f"{path}: dropped {dropped} link(s) outside their sentence (lenient)", dropped
            ),
            stacklevel=3,
        )


def read_pharaoh(
    path: str | Path,
    *,
    lenient: bool = False,
    src_lengths: Sequence[int] | None = None,
    tgt_lengths: Sequence[int] | None = None,
) -> list[Alignment]:
    """Read a Pharaoh file, one `Alignment` per line (empty line = no links).

    With `src_lengths`/`tgt_lengths` (one per line) links outside the sentence raise
    `AlignersInputError`, or with `lenient=True` are dropped, counted and warned about
    (`OutOfRangeLinksWarning`). Cost: O(file size).
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    alignments = [
        parse_pharaoh_line(text, path=name, line=n)
        for n, text in enumerate(read_lines(path), start=1)
    ]
    alignments, dropped = check_ranges(
        alignments, src_lengths, tgt_lengths, lenient=lenient, path=name
    )
    warn_dropped(dropped, name)
    return alignments


def link_line(links: Iterable[tuple[int, int]], posteriors=None) -> str:
    """One Pharaoh line of 0-based links: `i-j ...`, or `i-j:p` with `posteriors` (one
    probability per link, in the same order; None for a link writes it bare). This is the
    one link writer of every aligner's output. Cost O(L)."""
    if posteriors is None:
        return " ".join(f"{i}-{j}" for i, j in links)
    return " ".join(f"{i}-{j}" if p is None else f"{i}-{j}:{p:.6g}"
                    for (i, j), p in zip(links, posteriors, strict=True))


def format_pharaoh(alignment: Alignment, *, posteriors: bool = False) -> str:
    """One Pharaoh line: sorted links, sure as `i-j`, possible-only as `i?j`.

    With `posteriors=True`, links carrying a posterior get `:p`. Cost: O(L log L) for L
    links.
    """
    posts = (alignment.posteriors or {}) if posteriors else {}
    return " ".join(f"{i}{'-' if is_sure else '?'}{j}"
                    + (f":{posts[(i, j)]:.6g}" if (i, j) in posts else "")
                    for i, j, is_sure in alignment.links())


def write_pharaoh(
    alignments: Iterable[Alignment], out: str | Path | IO[str], *, posteriors: bool = False
) -> int:
    """Write one Pharaoh line per alignment to a path (`.gz`, `-` = stdout) or handle.

    Returns the number of lines written. Cost: O(total links).
    """
    return write_lines(out, (format_pharaoh(al, posteriors=posteriors) for al in alignments))
