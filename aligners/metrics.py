"""Alignment quality: precision, recall, AER, F1, F_alpha, exact match; micro and macro.

A = predicted links, S = sure gold links, P = possible gold links, S ⊆ P (Och & Ney 2003):
precision = |A ∩ P| / |A|, recall = |A ∩ S| / |S|, AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| +
|S|), F_alpha = 1 / (alpha / precision + (1 - alpha) / recall) (Fraser & Marcu 2007; 0.5 is
F1), exact match = the fraction of pairs with S ⊆ A ⊆ P. A ratio with denominator 0 is 0.

Micro scores pool the corpus's link counts. Macro scores follow jacana (Yao et al. 2013):
precision and recall averaged over pairs, F from the two averages, AER the mean per-pair
AER; unlike jacana, each average runs only over pairs where the ratio is defined.

Breakdowns (Yao et al. 2013, Tables 3, 4), the same formulas restricted to a class of links:
``identical`` / ``non-identical`` (same token string; needs the tokens) and ``token`` /
``phrase`` (phrasal: its source or target word has more than one link, in the prediction
for predicted links, in S ∪ P for gold links). Cost O(total links).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields

from aligners.data.types import Alignment, Link

__all__ = [
    "BREAKDOWNS",
    "LinkCounts",
    "Scores",
    "EvaluationReport",
    "evaluate_alignments",
    "format_report",
    "write_metrics_json",
]

# breakdown name -> its two classes
BREAKDOWNS: dict[str, tuple[str, str]] = {
    "identity": ("identical", "non-identical"),
    "phrasality": ("token", "phrase"),
}


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _harmonic(precision: float, recall: float, alpha: float) -> float:
    """F_alpha from precision and recall; 0 when either is 0."""
    if precision <= 0.0 or recall <= 0.0:
        return 0.0
    return 1.0 / (alpha / precision + (1.0 - alpha) / recall)


@dataclass
class LinkCounts:
    """Link counts of one pair or a corpus: |A|, |S|, |A ∩ S|, |A ∩ P|."""

    predicted: int = 0
    sure: int = 0
    hit_sure: int = 0
    hit_possible: int = 0

    @property
    def precision(self) -> float:
        return _ratio(self.hit_possible, self.predicted)

    @property
    def recall(self) -> float:
        return _ratio(self.hit_sure, self.sure)

    @property
    def aer(self) -> float:
        den = self.predicted + self.sure
        return 1.0 - (self.hit_sure + self.hit_possible) / den if den else 0.0


@dataclass(frozen=True)
class Scores:
    """Precision, recall, F1, F_alpha and AER, all in [0, 1]."""

    precision: float
    recall: float
    f1: float
    f_alpha: float
    aer: float


def _scores(precision: float, recall: float, aer: float, alpha: float) -> Scores:
    return Scores(precision, recall, _harmonic(precision, recall, 0.5),
                  _harmonic(precision, recall, alpha), aer)


def _micro(counts: LinkCounts, alpha: float) -> Scores:
    return _scores(counts.precision, counts.recall, counts.aer, alpha)


def _macro(per_pair: Sequence[LinkCounts], alpha: float) -> Scores:
    means = [_ratio(sum(x), len(x)) for x in ([c.precision for c in per_pair if c.predicted],
                                              [c.recall for c in per_pair if c.sure],
                                              [c.aer for c in per_pair if c.predicted or c.sure])]
    return _scores(*means, alpha)


@dataclass
class EvaluationReport:
    """What `evaluate_alignments` returns; `to_dict()` is the `--json` output."""

    pairs: int
    alpha: float
    counts: LinkCounts
    micro: Scores
    macro: Scores
    exact_match: float
    exact_matches: int
    # class name -> micro / macro scores of that class (only when computable)
    breakdown_micro: dict[str, Scores] = field(default_factory=dict)
    breakdown_macro: dict[str, Scores] = field(default_factory=dict)
    breakdown_counts: dict[str, LinkCounts] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if not k.startswith("breakdown_")}
        if self.breakdown_micro:
            out["breakdown"] = {name: {part: asdict(getattr(self, f"breakdown_{part}")[name])
                                       for part in ("counts", "micro", "macro")}
                                for name in self.breakdown_micro}
        return out


def _sum(counts: Sequence[LinkCounts]) -> LinkCounts:
    """The counts of a corpus (or of a class) from those of its pairs."""
    return LinkCounts(*(sum(getattr(c, f.name) for c in counts) for f in fields(LinkCounts)))


def _phrasal(links: Iterable[Link]) -> set[Link]:
    """The links whose source or target word has more than one link (block wider than 1)."""
    links = list(links)
    src_degree = Counter(i for i, _ in links)
    tgt_degree = Counter(j for _, j in links)
    return {(i, j) for i, j in links if src_degree[i] > 1 or tgt_degree[j] > 1}


def _class_counts(
    pred: frozenset[Link], gold: Alignment, pred_in: set[Link], gold_in: set[Link]
) -> LinkCounts:
    """Counts restricted to a class: predicted links in `pred_in`, gold links in `gold_in`."""
    pred_c = pred & pred_in
    sure_c = gold.sure & gold_in
    return LinkCounts(
        predicted=len(pred_c),
        sure=len(sure_c),
        hit_sure=len(sure_c & pred),
        hit_possible=len(pred_c & gold.possible),
    )


def evaluate_alignments(
    gold: Sequence[Alignment],
    test: Sequence[Alignment | Iterable[Link]],
    *,
    src_tokens: Sequence[Sequence[str]] | None = None,
    tgt_tokens: Sequence[Sequence[str]] | None = None,
    alpha: float = 0.5,
    breakdowns: bool = True,
) -> EvaluationReport:
    """Score predicted alignments `test` against `gold`, pair by pair (N pairs each).

    `test[n]` is an `Alignment` (all its links count as predicted) or an iterable of
    `(i, j)` links. `src_tokens`/`tgt_tokens` (N token lists each) enable the
    identical / non-identical breakdown; the token / phrase breakdown needs no tokens.
    Cost: O(total links). Raises `ValueError` when the sequences differ in length.
    """
    if len(gold) != len(test):
        raise ValueError(f"gold has {len(gold)} pairs but test has {len(test)}")
    has_tokens = src_tokens is not None and tgt_tokens is not None
    if has_tokens and not (len(src_tokens) == len(tgt_tokens) == len(gold)):
        raise ValueError(
            f"tokens given for {len(src_tokens)}/{len(tgt_tokens)} pairs, "
            f"alignments for {len(gold)}"
        )
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    # class name -> its per-pair counts, in BREAKDOWNS order (the report's order)
    class_pairs: dict[str, list[LinkCounts]] = {
        c: [] for name, pair in BREAKDOWNS.items() if breakdowns
        and (has_tokens or name != "identity") for c in pair}
    per_pair: list[LinkCounts] = []
    exact = 0
    for n, (g, t) in enumerate(zip(gold, test)):
        pred = t.possible if isinstance(t, Alignment) else frozenset((int(i), int(j)) for i, j in t)
        per_pair.append(_class_counts(pred, g, pred, g.possible))
        exact += g.sure <= pred <= g.possible
        if not breakdowns:
            continue
        # breakdown -> (predicted, gold) links of its first class; the second is the rest
        first = {"phrasality": (pred - _phrasal(pred), g.possible - _phrasal(g.possible))}
        if has_tokens:
            src, tgt = src_tokens[n], tgt_tokens[n]
            first["identity"] = tuple(
                {(i, j) for i, j in links if i < len(src) and j < len(tgt) and src[i] == tgt[j]}
                for links in (pred, g.possible))
        for name, (pred_in, gold_in) in first.items():
            x, y = BREAKDOWNS[name]
            class_pairs[x].append(_class_counts(pred, g, pred_in, gold_in))
            class_pairs[y].append(_class_counts(pred, g, pred - pred_in, g.possible - gold_in))
    total = _sum(per_pair)
    class_total = {c: _sum(counts) for c, counts in class_pairs.items()}
    return EvaluationReport(
        pairs=len(gold),
        alpha=alpha,
        counts=total,
        micro=_micro(total, alpha),
        macro=_macro(per_pair, alpha),
        exact_match=_ratio(exact, len(gold)),
        exact_matches=exact,
        breakdown_micro={c: _micro(class_total[c], alpha) for c in class_pairs},
        breakdown_macro={c: _macro(class_pairs[c], alpha) for c in class_pairs},
        breakdown_counts=class_total,
    )


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}"


def format_report(report: EvaluationReport) -> str:
    """The papers' table layout (percentages, one decimal; AER to four decimals too)."""
    a = report.alpha
    c = report.counts
    show_fa = a != 0.5  # F_0.5 is F1
    fa_head = f"{f'F{a:g}%':>7}" if show_fa else ""
    lines = [
        f"pairs {report.pairs}   links: predicted {c.predicted}, sure {c.sure}, "
        f"hit sure {c.hit_sure}, hit possible {c.hit_possible}",
        f"{'':8}{'P%':>7}{'R%':>7}{'F1%':>7}{fa_head}{'AER%':>7}{'E%':>7}",
    ]
    for name, s in (("micro", report.micro), ("macro", report.macro)):
        row = [s.precision, s.recall, s.f1, *[s.f_alpha] * show_fa, s.aer, report.exact_match]
        lines.append(f"{name:8}" + "".join(f"{_pct(x):>7}" for x in row))
    lines.append(
        f"AER {report.micro.aer:.4f} (micro)   exact match {report.exact_matches}/{report.pairs}"
    )
    for breakdown, (x, y) in BREAKDOWNS.items():
        if x not in report.breakdown_micro:
            continue
        sx, sy = x[0], y[0]
        lines.append(
            f"{breakdown:8}{f'P{sx}/P{sy}':>13}{f'R{sx}/R{sy}':>13}{f'F1{sx}/F1{sy}':>13}"
            f"   ({x}/{y}; {report.breakdown_counts[x].sure}/{report.breakdown_counts[y].sure}"
            " sure gold links)"
        )
        for avg, table in (("micro", report.breakdown_micro), ("macro", report.breakdown_macro)):
            lines.append(f"{avg:8}" + "".join(
                f"{_pct(getattr(table[x], m)) + '/' + _pct(getattr(table[y], m)):>13}"
                for m in ("precision", "recall", "f1")))
    return "\n".join(lines)


def write_metrics_json(path, metrics: dict[str, dict[str, float]]) -> None:
    """Write a task's `metrics.json`: the one schema of every task, split -> metric -> value.

    Values must be finite numbers (ints or floats); NaN/inf and nested dicts are refused, so
    that every run folder can be compared by the same reader. Written atomically
    (`aligners.outputs.write_lines`).
    """
    from aligners.outputs import write_lines

    for split, row in metrics.items():
        if not isinstance(row, dict):
            raise TypeError(f"metrics[{split!r}] must be a dict metric -> value")
        for name, value in row.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"metrics[{split!r}][{name!r}] = {value!r} is not a number")
            if not math.isfinite(value):
                raise ValueError(f"metrics[{split!r}][{name!r}] is not finite ({value})")
    write_lines(str(path), [json.dumps(metrics, indent=2, sort_keys=True)], flag="metrics.json")
