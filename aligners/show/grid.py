"""The terminal grid of one sentence pair: source words as rows, target words as vertical
column headers, one symbol per cell (`view.SYMBOLS`), ANSI colours on request. Each column
is two display columns wide (wide characters fill both, combining marks stay with their
base); words longer than `MAX_WORD` (rows) or `MAX_HEADER` (columns) are cut with `~`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from aligners.show.view import CLASSES, EMPTY, SYMBOLS

__all__ = ["COLORS", "legend", "render_pair", "render_scores"]

# class -> ANSI SGR parameters
COLORS: dict[str, str] = {
    "hit": "1;32", "hit_possible": "36", "false": "1;31", "miss": "1;33", "possible": "2",
    "link": "1;34", "sure": "1", "gold_possible": "2", "empty": "2",
}
MAX_WORD = 20
MAX_HEADER = 12


def _paint(text: str, cls: str, color: bool) -> str:
    return f"\x1b[{COLORS[cls]}m{text}\x1b[0m" if color else text


def _clusters(word: str) -> list[str]:
    """The characters of `word`, each with the combining marks that follow it; control
    characters (which could drive the terminal) become `?`."""
    out: list[str] = []
    for ch in word:
        if unicodedata.category(ch) == "Cc":
            ch = "?"
        if out and (unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Mc")):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _width(text: str) -> int:
    """Display width: 2 for wide/full-width characters, 0 for combining marks, else 1."""
    total = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Mc"):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


def _cut(word: str, limit: int) -> list[str]:
    """The clusters of `word`, at most `limit` display columns, cut ones ending in `~`."""
    parts = _clusters(word)
    if _width(word) <= limit:
        return parts
    out: list[str] = []
    for part in parts:
        if _width("".join(out) + part) > limit - 1:
            break
        out.append(part)
    return out + ["~"]


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def render_scores(scores: dict) -> str:
    """`P 66.7%  R 50.0%  F1 57.1%  AER 42.9%  (hits 1 sure + 1 possible, misses 1, false 1)`
    from a `view.pair_scores` dict (percentages to one decimal, as `aligners evaluate`)."""
    c = scores["counts"]
    hits, hits_p = c["hit_sure"], c["hit_possible"] - c["hit_sure"]
    return (f"P {100 * scores['precision']:.1f}%  R {100 * scores['recall']:.1f}%  "
            f"F1 {100 * scores['f1']:.1f}%  AER {100 * scores['aer']:.1f}%  "
            f"(hits {hits} sure + {hits_p} possible, misses {c['sure'] - hits}, "
            f"false {c['predicted'] - c['hit_possible']})")


def _grid(src: Sequence[str], tgt: Sequence[str], cells: dict, *, color: bool) -> list[str]:
    where = {(i, j): cls for cls, links in cells.items() for i, j in links}
    headers = [_cut(w, MAX_HEADER) for w in tgt]
    height = max((len(h) for h in headers), default=0)
    labels = ["".join(_cut(w, MAX_WORD)) for w in src]  # control characters cut to `?` too
    digits = len(str(max(len(src) - 1, 0)))
    label_width = max((_width(x) for x in labels), default=0)
    prefix = " " * (digits + 1 + label_width + 1)
    lines = []
    for k in range(height):
        row = [h[k - (height - len(h))] if k >= height - len(h) else "" for h in headers]
        lines.append((prefix + "".join(_pad(x, 2) for x in row)).rstrip())
    for i, label in enumerate(labels):
        marks = [_paint(SYMBOLS.get(cls, EMPTY), cls, color)
                 for cls in (where.get((i, j), "empty") for j in range(len(tgt)))]
        lines.append(f"{i:>{digits}} {_pad(label, label_width)} {' '.join(marks)}".rstrip())
    return lines


def render_pair(pair: dict, names: Sequence[str], total: int, *, color: bool = False) -> str:
    """The text of one `view.pair_view` dict: a heading, then per grid (its system's name
    from `names` when there are several) the grid and, with gold, its scores line.
    `total` is the corpus size shown in the heading (`pair 3/447`)."""
    src, tgt = pair["src"], pair["tgt"]
    ident = f" (id {pair['id']})" if pair.get("id") not in (None, "", str(pair["n"])) else ""
    lines = [f"pair {pair['n']}/{total}{ident}: {len(src)} source x {len(tgt)} target words"]
    for grid, name in zip(pair["grids"], names):
        if len(pair["grids"]) > 1:
            lines.append(f"[{name}]")
        lines += _grid(src, tgt, grid["cells"], color=color)
        if grid["scores"] is not None:
            lines.append(render_scores(grid["scores"]))
    return "\n".join(lines)


def legend(classes: Iterable[str], *, color: bool = False) -> str:
    """One line per class in `classes` (in `view.CLASSES` order) and one for empty cells."""
    wanted = set(classes)
    lines = ["legend:"]
    for name, (symbol, text) in CLASSES.items():
        if name in wanted:
            lines.append(f"  {_paint(symbol, name, color)}  {text}")
    lines.append(f"  {_paint(EMPTY, 'empty', color)}  no link")
    return "\n".join(lines)
