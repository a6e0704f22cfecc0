"""`aligners classify --model FOLDER [--task T] [--input FILE] [--explain]`: classify pairs
with a saved LCLR / two-stage model (`train.py experiment=lclr_*` writes `lclr/`, `two_stage/`).

Input: TSV lines `text1 \\t text2` (a transliteration pair: English name, candidate; a
sentence pair for paraphrase/entailment), an MSRP-format TSV (5 columns, label first), or a
NEWS transliteration `.xml` file. Output per pair: `label \\t score` (label 1 iff f(x) >= 0);
`--explain` adds a third column with the active latent variables (the alignment).
Example: `printf 'Abbas\\tעבאס\\n' | aligners classify --task transliteration --model OUT/lclr`
"""

from __future__ import annotations

import argparse
import sys

from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run", "read_pairs"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="saved LCLR model folder")
    parser.add_argument("--task", default=None,
                        help="expected task (paraphrase|entailment|transliteration); checked "
                             "against the model")
    parser.add_argument("--input", default="-", help="TSV `text1<TAB>text2` (- = stdin), "
                        "MSRP TSV, or NEWS .xml")
    parser.add_argument("--explain", action="store_true", help="print the latent alignment")


def read_pairs(path: str) -> list[tuple[str, str]]:
    """(text1, text2) pairs of `path`, one per line (an MSRP header line skipped); a line that
    is not 2 or 5 tab-separated columns, or has an empty text (a blank line too: output
    lines match input lines), raises AlignersInputError with file and 1-based line."""
    if path.endswith(".xml"):
        from aligners.data.labeled import read_news_translit
        return [(p.source, p.target) for p in read_news_translit(path)]
    from aligners.data.parallel import read_lines
    name = "<stdin>" if path == "-" else path
    lines = sys.stdin.read().splitlines() if path == "-" else read_lines(path)
    out = []
    for n, line in enumerate(lines, 1):
        cols = line.split("\t")
        if len(cols) == 5 and cols[0] in ("0", "1"):
            cols = cols[3:]
        elif len(cols) == 5 and n == 1 and cols[0].startswith("Quality"):
            continue
        if len(cols) != 2 or not cols[0].strip() or not cols[1].strip():
            raise AlignersInputError("expected 'text1<TAB>text2' (two non-empty columns) or "
                                     "an MSRP line", path=name, line=n)
        out.append((cols[0].strip(), cols[1].strip()))
    return out


def run(args: argparse.Namespace) -> int:
    from aligners.export import load

    pairs = read_pairs(args.input)  # bad input fails before the model is loaded
    clf = load(args.model, verb="classify")
    if args.task is not None and args.task != clf.task.name:
        raise AlignersInputError(f"the model is for task {clf.task.name!r}, not {args.task!r}",
                                 path=args.model)
    from aligners.outputs import write_lines

    write_lines("-", (_classify_line(clf, a, b, args) for a, b in pairs))
    return 0


def _classify_line(clf, a: str, b: str, args: argparse.Namespace) -> str:
    """`label \\t score [\\t latent variables]` of the pair (a, b)."""
    try:
        inst = clf.task.instance(a, b)
    except ValueError as err:
        raise AlignersInputError(f"cannot build the pair ({err})", path=args.input) from None
    score = clf.score(inst)
    line = f"{int(score >= 0)}\t{score:.6f}"
    if args.explain:
        line += "\t" + " ".join(clf.explain(inst))
    return line
