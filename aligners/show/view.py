"""What `aligners show` draws: the class of every cell of a source x target grid, and the
scores (always from `aligners.metrics.evaluate_alignments`); `grid.py` and `page.py` only
paint these classes.

Classes, for predicted links A and gold sure S ⊆ possible P (i source row, j target column):
with gold, ``hit`` A ∩ S, ``hit_possible`` A ∩ (P − S), ``false`` A − P, ``miss`` S − A,
``possible`` P − S − A; without gold, ``link`` = A; without a prediction, ``sure`` = S and
``gold_possible`` = P − S. `blocks` lists phrase links (a connected component of the link
graph filling a rectangle of contiguous rows x columns, more than one link).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict

from aligners.data.types import Alignment, Link
from aligners.metrics import evaluate_alignments, format_report

__all__ = [
    "CLASSES",
    "SYMBOLS",
    "blocks",
    "classify",
    "corpus_view",
    "pair_scores",
    "pair_view",
    "shown_classes",
]

# class -> (terminal symbol, legend text); the order is the legend's
CLASSES: dict[str, tuple[str, str]] = {
    "hit": ("#", "hit: predicted, sure gold"),
    "hit_possible": ("+", "predicted, possible gold"),
    "false": ("x", "false link: predicted, not in possible gold"),
    "miss": ("O", "miss: sure gold, not predicted"),
    "possible": ("?", "possible gold, not predicted"),
    "link": ("#", "predicted link"),
    "sure": ("#", "sure gold link"),
    "gold_possible": ("?", "possible gold link"),
}
SYMBOLS: dict[str, str] = {name: symbol for name, (symbol, _) in CLASSES.items()}
EMPTY = "."


def classify(pred: Alignment | None, gold: Alignment | None) -> dict[str, frozenset[Link]]:
    """The cells of one pair by class (see the module docstring); empty classes included.

    `pred`'s links are all its links (`pred.possible`, as the scorer counts them). At least
    one of `pred` / `gold` must be given. Cost: O(links).
    """
    if pred is None and gold is None:
        raise ValueError("classify needs a prediction, gold, or both")
    if gold is None:
        return {"link": pred.possible}
    only_possible = gold.possible - gold.sure
    if pred is None:
        return {"sure": gold.sure, "gold_possible": only_possible}
    a = pred.possible
    return {
        "hit": a & gold.sure,
        "hit_possible": a & only_possible,
        "false": a - gold.possible,
        "miss": gold.sure - a,
        "possible": only_possible - a,
    }


def shown_classes(*, gold: bool, pred: bool) -> list[str]:
    """The classes `classify` gives with / without gold and a prediction (the legend's)."""
    empty = Alignment()  # without gold, the links' class even with no prediction
    return list(classify(empty if pred or not gold else None, empty if gold else None))


def pair_scores(pred: Alignment, gold: Alignment) -> dict:
    """`{"counts": LinkCounts as a dict, "precision", "recall", "f1", "aer"}` of one pair,
    computed by `aligners.metrics.evaluate_alignments` (micro scores of a one-pair corpus)."""
    report = evaluate_alignments([gold], [pred], breakdowns=False)
    s = report.micro
    return {"counts": asdict(report.counts), "precision": s.precision, "recall": s.recall,
            "f1": s.f1, "aer": s.aer}


def blocks(links: Iterable[Link]) -> list[tuple[int, int, int, int]]:
    """Phrase blocks `(i0, i1, j0, j1)` (inclusive) of a link set, sorted: the connected
    components with more than one link whose links are exactly rows i0..i1 x columns j0..j1,
    i.e. every row of the block links to exactly its columns and every column to exactly
    its rows. Cost: O(L x block size) for L links."""
    cols_of: dict[int, set[int]] = defaultdict(set)
    rows_of: dict[int, set[int]] = defaultdict(set)
    for i, j in links:
        cols_of[i].add(j)
        rows_of[j].add(i)
    out = set()
    for cols in cols_of.values():
        rows = rows_of[min(cols)]
        if (len(rows) * len(cols) > 1 and all(rows_of[j] == rows for j in cols)
                and all(cols_of[i] == cols for i in rows)
                and max(rows) - min(rows) + 1 == len(rows)
                and max(cols) - min(cols) + 1 == len(cols)):
            out.add((min(rows), max(rows), min(cols), max(cols)))
    return sorted(out)


def pair_view(
    n: int,
    src: Sequence[str],
    tgt: Sequence[str],
    gold: Alignment | None,
    preds: Sequence[Alignment],
    *,
    pair_id: str | None = None,
) -> dict:
    """The JSON-able view of pair `n` (1-based): its words and one grid per prediction in
    `preds` (or one grid of the gold alone when `preds` is empty).

    `{"n", "id", "src", "tgt", "gold_blocks", "grids": [{"cells": {class: [[i, j], ...]},
    "blocks": [[i0, i1, j0, j1], ...], "scores": pair_scores(...) or None,
    "posteriors": [[i, j, p], ...] (only when the prediction has them)}]}`.
    """
    grids = []
    for pred in preds or [None]:
        grid = {"cells": {name: [list(link) for link in sorted(links)]
                          for name, links in classify(pred, gold).items()},
                "blocks": [list(b) for b in blocks((pred or gold).possible)],
                "scores": None if gold is None or pred is None
                else pair_scores(pred, gold)}
        if pred is not None and pred.posteriors:
            grid["posteriors"] = [[i, j, p] for (i, j), p in sorted(pred.posteriors.items())]
        grids.append(grid)
    return {
        "n": n,
        "id": pair_id,
        "src": list(src),
        "tgt": list(tgt),
        "gold_blocks": [] if gold is None else [list(b) for b in blocks(gold.possible)],
        "grids": grids,
    }


def corpus_view(
    src_tokens: Sequence[Sequence[str]],
    tgt_tokens: Sequence[Sequence[str]],
    gold: Sequence[Alignment] | None,
    systems: Sequence[tuple[str, Sequence[Alignment]]],
    *,
    ids: Sequence[str | None] | None = None,
) -> dict:
    """The JSON-able view of a whole corpus of N pairs: `{"has_gold", "alpha", "legend":
    [[class, symbol, text], ...] (the classes shown), "systems": [{"name", "report"}],
    "pairs": [pair_view(...) for each pair]}`.

    `systems` are (name, N predicted alignments); with gold, each system's `report` is
    `evaluate_alignments(gold, links, src_tokens=..., tgt_tokens=...).to_dict()` plus its
    `format_report` text under "text" -- what `aligners evaluate --json` / `aligners
    evaluate` print for the same files and texts. Cost: O(total links + total words).
    """
    count = len(src_tokens)
    for name, als in systems:
        if len(als) != count:
            raise ValueError(f"{name}: {len(als)} alignments for {count} pairs")
    if gold is not None and len(gold) != count:
        raise ValueError(f"gold: {len(gold)} alignments for {count} pairs")
    out_systems = []
    for name, als in systems:
        report = None
        if gold is not None:
            report = evaluate_alignments(gold, als, src_tokens=src_tokens, tgt_tokens=tgt_tokens)
            report = {**report.to_dict(), "text": format_report(report)}
        out_systems.append({"name": name, "report": report})
    pairs = [
        pair_view(n + 1, src_tokens[n], tgt_tokens[n], None if gold is None else gold[n],
                  [als[n] for _, als in systems], pair_id=None if ids is None else ids[n])
        for n in range(count)
    ]
    shown = shown_classes(gold=gold is not None, pred=bool(systems))
    return {"has_gold": gold is not None, "alpha": 0.5,  # the scorer's default alpha
            "legend": [[name, *CLASSES[name]] for name in shown], "systems": out_systems,
            "pairs": pairs}
