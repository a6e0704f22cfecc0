"""Gold-alignment readers for every shipped notation, normalised to 0-based (source, target).

* NAACL/WPT: one link per line `snum i j [S|P] [confidence]`, 1-based with 0 = NULL
  (`token_base=0`: 0-based); column 2 is the source unless `swap=True`; no label = sure;
  NULL links are dropped and counted.
* 1-based Pharaoh-like `i-j` (sure) / `ipj` (possible), one line per pair: `read_onebased`.
* jacana JSON and MultiMWA TSV carry their own text: `jacana.py`.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

from aligners.data.a3 import read_a3
from aligners.data.jacana import TEXT_READERS, text_format
from aligners.data.parallel import read_lines, write_lines
from aligners.data.pharaoh import (
    bounds_text,
    check_ranges,
    parse_pharaoh_line,
    read_pharaoh,
    warn_dropped,
)
from aligners.data.types import Alignment
from aligners.errors import AlignersInputError

__all__ = [
    "FORMATS",
    "NullLinksWarning",
    "read_alignment_file",
    "read_naacl",
    "read_onebased",
    "read_snum_text",
    "sniff_format",
    "write_naacl",
    "write_onebased",
]

_SNUM = re.compile(r"\s*<s\s+snum\s*=\s*[\"']?(\d+)[\"']?\s*>(.*?)</s>\s*\Z")
_INT = re.compile(r"\d+\Z")
_NAACL = re.compile(r"\s*(\d+)\s+(\d+)\s+(\d+)(?:\s+([SP]))?(?:\s+(\S+))?\s*\Z")


class NullLinksWarning(UserWarning):
    """NAACL links to position 0 (NULL) were dropped (the message says how many)."""


def read_snum_text(path: str | Path, *,
                   lines: Iterable[str] | None = None) -> list[tuple[int, list[str]]]:
    """Read a WPT text file of `<s snum=N> tokens </s>` lines -> `[(snum, tokens)]`. O(file size).

    A line without the wrapper (empty ones too) or a repeated snum raises `AlignersInputError`
    (file, line). `lines`: the already-read lines of `path` (stdin can be read only once).
    """
    out: list[tuple[int, list[str]]] = []
    seen: set[int] = set()
    for lineno, text in enumerate(read_lines(path) if lines is None else lines, start=1):
        m = _SNUM.match(text)
        if m is None:
            raise AlignersInputError(
                "expected '<s snum=N> tokens </s>'", path=str(path), line=lineno
            )
        snum = int(m.group(1))
        if snum in seen:
            raise AlignersInputError(
                f"sentence number {snum} repeated", path=str(path), line=lineno
            )
        seen.add(snum)
        out.append((snum, m.group(2).split()))
    return out


def read_naacl(
    path: str | Path,
    *,
    snums: Sequence[int] | None = None,
    token_base: int = 1,
    swap: bool = False,
    lenient: bool = False,
    src_lengths: Sequence[int] | None = None,
    tgt_lengths: Sequence[int] | None = None,
) -> list[Alignment]:
    """Read NAACL/WPT links `snum i j [S|P] [confidence]` -> one `Alignment` per sentence.

    `snums` lists the sentence numbers in file order of the text (from `read_snum_text`);
    without it the sentences are `min(snum) .. max(snum)` of the file (sentences after the
    last link cannot be known). Source = column 2 (`swap=True`: column 3). With
    `token_base=1`, position 0 is NULL: such links are dropped with a `NullLinksWarning`.
    A confidence (5th field, or 4th when it is a number) in [0, 1] becomes the posterior.
    Links outside `src_lengths`/`tgt_lengths` raise, or are dropped with `lenient=True`.
    Cost: O(file size).
    """
    if token_base not in (0, 1):
        raise AlignersInputError(f"token_base must be 0 or 1, got {token_base}")
    name = "<stdin>" if str(path) == "-" else str(path)
    # snum -> its links (i, j, sure, confidence, line), a NULL link's i or j being -1
    links: dict[int, list[tuple[int, int, bool, float | None, int]]] = {}
    for lineno, text in enumerate(read_lines(path), start=1):
        if not text.split():
            continue
        snum, a, b, is_sure, conf = _parse_naacl_line(text, name, lineno)
        if swap:
            a, b = b, a
        links.setdefault(snum, []).append((a - token_base, b - token_base, is_sure, conf, lineno))
    if snums is None:
        snums = list(range(min(links), max(links) + 1)) if links else []
    if len(set(snums)) != len(snums):
        raise AlignersInputError("repeated sentence numbers in snums", path=name)
    unknown = sorted(set(links) - set(snums))
    if unknown:
        raise AlignersInputError(
            f"sentence number {unknown[0]} has links but is not among the {len(snums)} "
            "sentences of the text; expected links only for sentences of the text",
            path=name,
            line=links[unknown[0]][0][-1],
        )
    for what, lengths in (("source", src_lengths), ("target", tgt_lengths)):
        if lengths is not None and len(lengths) != len(snums):
            raise AlignersInputError(
                f"{len(snums)} sentences but {len(lengths)} {what} lengths; expected one per "
                "sentence", path=name,
            )
    none = [None] * len(snums)  # lengths not given
    done = [_naacl_sentence(links.get(snum, ()), snum, src_n, tgt_n, lenient, name)
            for snum, src_n, tgt_n in zip(snums, none if src_lengths is None else src_lengths,
                                          none if tgt_lengths is None else tgt_lengths)]
    warn_dropped(sum(d for _, d in done), name)
    nulls = sum(min(i, j) < 0 for sentence in links.values() for i, j, *_ in sentence)
    if nulls:
        warnings.warn(
            NullLinksWarning(f"{name}: dropped {nulls} NULL link(s) (position 0)"),
            stacklevel=2,
        )
    return [al for al, _ in done]


def _parse_naacl_line(text: str, name: str, lineno: int):
    """(snum, i, j, sure, confidence or None) of a NAACL line; one-line error if malformed."""
    m = _NAACL.match(text)
    try:
        conf = None if m is None or m.group(5) is None else float(m.group(5))
    except ValueError:
        conf = math.nan
    if m is None or (conf is not None and not 0.0 <= conf <= 1.0):
        raise AlignersInputError(
            f"malformed NAACL link {text.strip()!r}; expected 'snum i j [S|P] [confidence]' "
            "with non-negative integers and a confidence in [0, 1]",
            path=name,
            line=lineno,
        )
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) != "P", conf


def _naacl_sentence(links, snum, src_n, tgt_n, lenient, name) -> tuple[Alignment, int]:
    """The Alignment of one sentence's links and how many were dropped (out of range with
    lenient; without, such a link raises)."""
    sure, possible, posts = set(), set(), {}
    dropped = 0
    for i, j, is_sure, conf, lineno in links:
        if min(i, j) < 0:  # a NULL link (counted by the caller)
            continue
        if (src_n is not None and i >= src_n) or (tgt_n is not None and j >= tgt_n):
            if lenient:
                dropped += 1
                continue
            raise AlignersInputError(
                f"link ({i}, {j}) (0-based source-target) of sentence {snum} lies outside "
                f"its {bounds_text(src_n, tgt_n)} (use lenient/--lenient to drop such links)",
                path=name, line=lineno,
            )
        (sure if is_sure else possible).add((i, j))
        if conf is not None:
            posts[(i, j)] = conf
    return Alignment(frozenset(sure), frozenset(possible), posts or None), dropped


def read_onebased(
    path: str | Path,
    *,
    lenient: bool = False,
    src_lengths: Sequence[int] | None = None,
    tgt_lengths: Sequence[int] | None = None,
) -> list[Alignment]:
    """Read 1-based `i-j` (sure) / `ipj` or `i?j` (possible) lines -> 0-based `Alignment`s.

    Source = the first index. Index 0 is malformed (these files have no NULL links).
    Range checks as `read_pharaoh`. Cost: O(file size).
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    alignments = []
    for lineno, text in enumerate(read_lines(path), start=1):
        al = parse_pharaoh_line(text, path=name, line=lineno)
        if any(i == 0 or j == 0 for i, j in al.possible):
            raise AlignersInputError(
                "index 0 in a 1-based alignment file; expected positions >= 1",
                path=name,
                line=lineno,
            )
        alignments.append(Alignment(
            frozenset((i - 1, j - 1) for i, j in al.sure),
            frozenset((i - 1, j - 1) for i, j in al.possible),
            {(i - 1, j - 1): p for (i, j), p in al.posteriors.items()} if al.posteriors else None))
    alignments, dropped = check_ranges(
        alignments, src_lengths, tgt_lengths, lenient=lenient, path=name
    )
    warn_dropped(dropped, name)
    return alignments


def write_naacl(
    alignments: Iterable[Alignment],
    out: str | Path | IO[str],
    *,
    snums: Sequence[int] | None = None,
) -> int:
    """Write 1-based NAACL `snum i j S|P` lines (source first); return the number of links
    written. Sentence numbers are `snums` (default 1, 2, ...), zero-padded to 4 digits. Read
    back with `read_naacl(..., snums=...)` to keep trailing link-less sentences. O(links).
    """
    def lines():
        for n, al in enumerate(alignments):
            snum = (n + 1) if snums is None else snums[n]
            for i, j, sure in al.links():
                yield f"{snum:04d} {i + 1} {j + 1} {'S' if sure else 'P'}"
    return write_lines(out, lines())


def write_onebased(alignments: Iterable[Alignment], out: str | Path | IO[str]) -> int:
    """Write 1-based `i-j` / `ipj` lines (the Ro-En/Ja-En/Zh-En notation); return line count."""
    return write_lines(out, (" ".join(f"{i + 1}{'-' if s else 'p'}{j + 1}"
                                      for i, j, s in al.links()) for al in alignments))


FORMATS = (
    "auto", "pharaoh", "onebased", "naacl", "naacl0", "jacana", "jacana-sp", "multimwa", "a3",
)


def sniff_format(path: str | Path) -> str:
    """Guess a notation: `.json` -> jacana (`jacana-sp` if the name has `sure+poss`),
    `.tsv` -> multimwa, a first line starting with `#` -> a3 (GIZA A3 / MSR06 orig),
    NAACL-shaped first line (`snum i j [S|P]`) -> naacl, else pharaoh.

    1-based `i-j` files and 0-based NAACL (Biçici) cannot be told apart from their
    0-based/1-based twins: name `onebased` / `naacl0` explicitly.
    """
    carried = text_format(path)
    if carried is not None:
        return carried
    if str(path) == "-":
        return "pharaoh"
    lines = (text.replace("\ufeff", "").split() for text in read_lines(path))
    fields = next((f for f in lines if f), [""])  # the first non-empty line's
    if fields[0].startswith("#"):
        return "a3"
    naacl = 3 <= len(fields) <= 5 and all(_INT.match(f) for f in fields[:3])
    return "naacl" if naacl else "pharaoh"


def read_alignment_file(
    path: str | Path,
    *,
    fmt: str = "auto",
    lenient: bool = False,
    snums: Sequence[int] | None = None,
    src_lengths: Sequence[int] | None = None,
    tgt_lengths: Sequence[int] | None = None,
) -> list[Alignment]:
    """Read any supported notation into 0-based `Alignment`s, one per sentence pair.

    `fmt` is one of `FORMATS` (`auto` = `sniff_format`). NAACL files use `snums` (else
    min..max of the file). Files that carry their text (jacana, MultiMWA, A3) are checked
    against it; the others when `src_lengths`/`tgt_lengths` are given. Out-of-range links
    raise `AlignersInputError`, or with `lenient=True` are dropped, counted and warned about.
    Cost: O(file size).
    """
    if fmt not in FORMATS:
        raise AlignersInputError(f"unknown alignment format {fmt!r}; expected one of {FORMATS}")
    if fmt == "auto":
        fmt = sniff_format(path)
    lengths = {"lenient": lenient, "src_lengths": src_lengths, "tgt_lengths": tgt_lengths}
    if fmt == "pharaoh":
        return read_pharaoh(path, **lengths)
    if fmt == "onebased":
        return read_onebased(path, **lengths)
    if fmt in ("naacl", "naacl0"):
        return read_naacl(path, snums=snums, token_base=1 if fmt == "naacl" else 0, **lengths)
    read = read_a3 if fmt == "a3" else TEXT_READERS[fmt]
    return [p.alignment for p in read(path, lenient=lenient)]
