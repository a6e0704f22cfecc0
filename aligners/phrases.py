"""Phrase-pair extraction with orientation classes, following Moses' `extract` conventions.

A phrase pair is a source and a target span (at most `max_length` words each) consistent
with the alignment (no link leaves it, at least one inside), extended over unaligned
source words at its boundaries. Orientation towards the previous (backward) / next
(forward) target phrase, classes `mono`, `swap`, `other`, by mode: `wbe` (word-based), `phrase`
(also any extracted phrase pair at the corner) and `hier` (any consistent block, Galley &
Manning 2008), the corner sets as in Moses' `extract-main.cpp`: line-for-line Moses' `.o`
output. 0-based positions, half-open spans.
"""

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import NamedTuple

from aligners.data.parallel import read_lines, read_parallel
from aligners.data.pharaoh import check_ranges, parse_pharaoh_line, warn_dropped
from aligners.errors import AlignersInputError

__all__ = [
    "ORIENTATIONS",
    "MODES",
    "PhrasePair",
    "extract_phrase_pairs",
    "format_extract_line",
    "iter_extract",
    "load_corpus",
]

ORIENTATIONS: tuple[str, ...] = ("mono", "swap", "other")
MONO, SWAP, OTHER = 0, 1, 2
MODES: tuple[str, ...] = ("wbe", "phrase", "hier")


class PhrasePair(NamedTuple):
    """One extracted phrase pair: half-open spans and the class ids (index into ORIENTATIONS)."""

    src_start: int
    src_end: int
    tgt_start: int
    tgt_end: int
    backward: int
    forward: int


def extract_phrase_pairs(
    links: Iterable[tuple[int, int]],
    *,
    src_len: int,
    tgt_len: int,
    max_length: int = 7,
    mode: str = "wbe",
) -> list[PhrasePair]:
    """All consistent phrase pairs of one sentence pair, in Moses' output order.

    Shapes: `links` are `(source_index, target_index)` pairs, 0-based, I = src_len,
    J = tgt_len. Cost: O(J * L * I) for `wbe`/`phrase` (L = max_length), O(J^2 * I) for
    `hier` (blocks of any length are needed); memory O(number of pairs).
    """
    if mode not in MODES:
        raise AlignersInputError(f"orientation mode {mode!r}; expected one of {MODES}")
    if max_length < 1:
        raise AlignersInputError(f"max_length must be >= 1, got {max_length}")
    link_set = set()
    for link in links:
        i, j = int(link[0]), int(link[1])
        if not (0 <= i < src_len and 0 <= j < tgt_len):
            raise AlignersInputError(f"link {i}-{j} outside a {src_len}x{tgt_len} sentence pair")
        link_set.add((i, j))
    inbound, tables = _blocks(link_set, src_len, tgt_len, max_length, mode)
    # backward: towards the previous target word s_e - 1; forward: the next one, e_e + 1
    # (Moses swaps the corner tables, see `_orientation`)
    orient = partial(_orientation, mode, link_set, tables, (src_len, tgt_len))
    return [PhrasePair(s_f, e_f + 1, s_e, e_e + 1, orient(s_e - 1, s_f - 1, e_f + 1, False),
                       orient(e_e + 1, e_f + 1, s_f - 1, True)) for s_f, e_f, s_e, e_e in inbound]


def _blocks(link_set, n_src: int, n_tgt: int, lim: int, mode: str):
    """(inbound, (in_br, in_bl, out_br, out_bl)): the consistent blocks (inclusive sF, eF, sE,
    eE) within the length limit, and (modes phrase, hier) the corner sets of all consistent
    blocks, inside and outside the limit, keyed by target position (bottom = target end:
    source end (br) and start (bl))."""
    to_src: list[list[int]] = [[] for _ in range(n_tgt)]
    src_count = [0] * n_src
    for i, j in sorted(link_set):
        to_src[j].append(i)
        src_count[i] += 1
    relax = mode == "hier"
    corners = mode != "wbe"
    inbound: list[tuple[int, int, int, int]] = []
    tables: tuple[dict[int, set[int]], ...] = ({}, {}, {}, {})
    for s_e in range(n_tgt):
        min_f, max_f = n_src, -1
        used = list(src_count)
        e_stop = n_tgt if relax else min(n_tgt, s_e + lim)
        for e_e in range(s_e, e_stop):
            for f in to_src[e_e]:
                min_f = min(min_f, f)
                max_f = max(max_f, f)
                used[f] -= 1
            if max_f < 0 or (not relax and max_f - min_f >= lim):
                continue
            if any(used[f] > 0 for f in range(min_f, max_f + 1)):
                continue  # a source word inside links outside the target span
            s_f = min_f
            while (s_f >= 0 and (relax or s_f > max_f - lim)
                   and (s_f == min_f or src_count[s_f] == 0)):
                e_f = max_f
                while e_f < n_src and (relax or e_f < s_f + lim) and (
                    e_f == max_f or src_count[e_f] == 0
                ):
                    inside = e_e - s_e < lim and e_f - s_f < lim
                    if inside:
                        inbound.append((s_f, e_f, s_e, e_e))
                    if corners:
                        br, bl = tables[:2] if inside else tables[2:]
                        br.setdefault(e_e, set()).add(e_f)
                        bl.setdefault(e_e, set()).add(s_f)
                    e_f += 1
                s_f -= 1
    return inbound, tables


def _orientation(mode, link_set, tables, lengths, e, f_mono, f_swap, forward) -> int:
    """The orientation of a block towards target word e (-1 or J: the sentence boundary,
    aligned to the corner -1/-1 or I/J): monotone at source word f_mono, swap at f_swap; the
    forward direction reads the corner tables swapped (as Moses does)."""
    in_br, in_bl, out_br, out_bl = tables
    if forward:
        in_br, in_bl, out_br, out_bl = in_bl, in_br, out_bl, out_br

    def aligned(f: int) -> bool:
        if f == -1 and e == -1 or (f, e) == lengths:
            return True
        return f >= 0 and e >= 0 and (f, e) in link_set

    def corner(table: dict[int, set[int]], f: int) -> bool:
        return f in table.get(e, ())

    left, right = aligned(f_mono), aligned(f_swap)
    word_mono, word_swap = left and not right, right and not left
    if mode == "wbe":
        return MONO if word_mono else SWAP if word_swap else OTHER
    phrase = (MONO if word_mono or corner(in_br, f_mono)
              else SWAP if word_swap or corner(in_bl, f_swap) else OTHER)
    if mode == "phrase" or phrase != OTHER:
        return phrase
    return MONO if corner(out_br, f_mono) else SWAP if corner(out_bl, f_swap) else OTHER


def format_extract_line(
    src: Sequence[str],
    tgt: Sequence[str],
    pair: PhrasePair,
    links: Iterable[tuple[int, int]],
    *,
    direction: str = "backward",
) -> str:
    """`src phrase ||| tgt phrase ||| i-j ... ||| orientation` (no trailing newline).

    `direction` is `backward`, `forward` or `both` (`both` writes "prev next", as Moses);
    the links are those inside `pair`, relative to its spans, ordered by target then source.
    """
    names = {
        "backward": ORIENTATIONS[pair.backward],
        "forward": ORIENTATIONS[pair.forward],
        "both": f"{ORIENTATIONS[pair.backward]} {ORIENTATIONS[pair.forward]}",
    }
    if direction not in names:
        raise AlignersInputError(f"direction {direction!r}; expected backward, forward or both")
    inside = {(i - pair.src_start, j - pair.tgt_start) for i, j in links
              if pair.src_start <= i < pair.src_end and pair.tgt_start <= j < pair.tgt_end}
    align = " ".join(f"{i}-{j}" for i, j in sorted(inside, key=lambda ij: (ij[1], ij[0])))
    return (
        f"{' '.join(src[pair.src_start:pair.src_end])} ||| "
        f"{' '.join(tgt[pair.tgt_start:pair.tgt_end])} ||| {align} ||| {names[direction]}"
    )


def iter_extract(
    corpus: Iterable[tuple[Sequence[str], Sequence[str], Iterable[tuple[int, int]]]],
    *,
    max_length: int = 7,
    mode: str = "wbe",
) -> Iterator[tuple[int, Sequence[str], Sequence[str], list[tuple[int, int]], list[PhrasePair]]]:
    """Stream `(sentence_index, src, tgt, links, pairs)` over `(src, tgt, links)` triples.

    Constant memory in the corpus size: one sentence pair's phrase pairs at a time.
    Empty sentence pairs yield no phrase pairs (as Moses skips them).
    """
    for n, (src, tgt, links) in enumerate(corpus):
        links = list(links)
        if not src or not tgt:
            yield n, src, tgt, links, []
            continue
        try:
            pairs = extract_phrase_pairs(
                links, src_len=len(src), tgt_len=len(tgt), max_length=max_length, mode=mode
            )
        except AlignersInputError as err:
            raise AlignersInputError(f"sentence pair {n + 1}: {err.reason}") from None
        yield n, src, tgt, links, pairs


def load_corpus(src: str, tgt: str, align: str, *, limit: int | None = None,
                lowercase: bool = False, lenient: bool = False):
    """Stream `(src tokens, tgt tokens, [(i, j), ...])` from a bitext + Pharaoh file (gzip ok);
    every link counts; `limit` keeps the first N pairs. An out-of-range link raises
    `AlignersInputError` (file, line), or with `lenient=True` is dropped, counted and warned.
    """
    name = "<stdin>" if str(align) == "-" else str(align)
    pairs = read_parallel(src, tgt, lowercase=lowercase)
    aligns = read_lines(align)
    n = dropped = 0
    for n, pair in enumerate(pairs, start=1):
        if limit is not None and n > limit:
            break
        text = next(aligns, None)
        if text is None:
            raise AlignersInputError(
                f"alignment file ends before the bitext (expected a line for pair {n})",
                path=name, line=n)
        al = parse_pharaoh_line(text, path=name, line=n)
        (al,), bad = check_ranges([al], [len(pair[0])], [len(pair[1])], lenient=lenient,
                                  path=name, line_numbers=[n])
        dropped += bad
        yield pair[0], pair[1], sorted(al.possible)
    else:
        if next(aligns, None) is not None:
            raise AlignersInputError("alignment file has more lines than the bitext",
                                     path=name, line=n + 1)
    warn_dropped(dropped, name)
