"""`aligners evaluate --gold G --test T`: precision, recall, AER, F1 (+ breakdowns).

Examples (shipped data):
    aligners evaluate --gold ../shared/data/hansards-enfr-naacl2003/test/test.wa.nonullalign \\
        --test ../shared/oracles/symmetrize/eflomal.enfr.grow-diag-final-and
    aligners evaluate --dataset edbpp --split test --test PRED.pharaoh --json
The gold file's notation is sniffed (`--format` overrides); the test file is read as
`--test-format` (default: sniffed, usually Pharaoh `i-j`). Tokens for the identical /
non-identical breakdown come from jacana JSON / MultiMWA gold files, from a registry
dataset (`--dataset NAME [--split S]`, `aligners.data.datasets`, instead of `--gold`), or
from `--src-text`/`--tgt-text` (plain one-sentence-per-line or WPT `<s snum=N>` files).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run"]

_TEXT_FORMATS = ("jacana", "jacana-sp", "multimwa")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aligners.data.gold import FORMATS

    gold = parser.add_mutually_exclusive_group(required=True)
    gold.add_argument("--gold", help="gold alignment file")
    gold.add_argument("--dataset", help="gold from the dataset registry (e.g. hansards-enfr)")
    parser.add_argument("--split", help="split of --dataset (default: test or its only split)")
    parser.add_argument("--test", required=True, help="predicted alignment file")
    parser.add_argument(
        "--format", default="auto", choices=FORMATS, help="notation of --gold (auto: sniffed)"
    )
    parser.add_argument(
        "--test-format", default="auto", choices=FORMATS, help="notation of --test"
    )
    parser.add_argument("-s", "--src-text",
                        help="source sentences (enables the identity breakdown)")
    parser.add_argument("-t", "--tgt-text", help="target sentences")
    parser.add_argument(
        "--lenient",
        action="store_true",
        help="drop (count, warn about) links outside their sentence instead of failing",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.5, help="alpha of F_alpha (Fraser & Marcu)"
    )
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")


def _read_text(path: str) -> tuple[list[int] | None, list[list[str]]]:
    """(snums or None, token lists) from a WPT `<s snum=N>` file or a plain token file."""
    from aligners.data.gold import read_snum_text
    from aligners.data.parallel import read_lines

    lines = list(read_lines(path))  # read once: `path` may be stdin
    if lines and lines[0].lstrip().startswith("<s"):
        rows = read_snum_text(path, lines=lines)
        return [s for s, _ in rows], [list(t) for _, t in rows]
    return None, [line.split() for line in lines]


def _gold_tokens(path: str, fmt: str, lenient: bool):
    from aligners.data.jacana import read_jacana_json, read_multimwa

    if fmt == "multimwa":
        pairs = read_multimwa(path, lenient=lenient)
    else:
        pairs = read_jacana_json(path, sure_plus_poss=fmt == "jacana-sp", lenient=lenient)
    return [p.alignment for p in pairs], [p.src for p in pairs], [p.tgt for p in pairs]


def run(args: argparse.Namespace) -> int:
    from aligners.data.gold import read_alignment_file, sniff_format

    if args.gold == "-" and args.test == "-":
        raise AlignersInputError("only one of --gold / --test can be '-' (stdin)")
    if args.dataset is not None:
        return _run_dataset(args)
    if (args.src_text is None) != (args.tgt_text is None):
        raise AlignersInputError("--src-text and --tgt-text go together; give both or neither")
    gold_fmt = sniff_format(args.gold) if args.format == "auto" else args.format
    src = tgt = snums = None
    if args.src_text is not None:
        snums, src = _read_text(args.src_text)
        tgt_snums, tgt = _read_text(args.tgt_text)
        if len(src) != len(tgt) or snums != tgt_snums:
            raise AlignersInputError(
                f"{args.src_text} and {args.tgt_text} hold different sentences "
                f"({len(src)} vs {len(tgt)} lines)"
            )
    lengths = {}
    if src is not None:
        lengths = {"src_lengths": [len(s) for s in src], "tgt_lengths": [len(t) for t in tgt]}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if gold_fmt in _TEXT_FORMATS:
            gold, src, tgt = _gold_tokens(args.gold, gold_fmt, args.lenient)
            lengths = {"src_lengths": [len(s) for s in src], "tgt_lengths": [len(t) for t in tgt]}
        else:
            extra = {"snums": snums} if gold_fmt in ("naacl", "naacl0") and snums else {}
            gold = read_alignment_file(
                args.gold, fmt=gold_fmt, lenient=args.lenient, **extra, **lengths
            )
        fmt = args.test_format
        extra = {"snums": snums} if fmt in ("naacl", "naacl0") and snums else {}
        test = read_alignment_file(args.test, fmt=fmt, lenient=args.lenient, **extra, **lengths)
    for w in caught:
        print(f"aligners evaluate: warning: {w.message}", file=sys.stderr)
    return _report(args, gold, test, src, tgt)


def _report(args, gold, test, src, tgt) -> int:
    from aligners.metrics import evaluate_alignments, format_report

    if len(gold) != len(test):
        raise AlignersInputError(
            f"{args.gold or args.dataset} has {len(gold)} sentence pairs but {args.test} has "
            f"{len(test)}; expected the same pairs in the same order"
        )
    if not gold:
        raise AlignersInputError(
            f"{args.gold or args.dataset}: no sentence pairs; expected at least one to score"
        )
    if not 0.0 <= args.alpha <= 1.0:
        raise AlignersInputError(f"--alpha must be in [0, 1], got {args.alpha}")
    report = evaluate_alignments(gold, test, src_tokens=src, tgt_tokens=tgt, alpha=args.alpha)
    from aligners.outputs import write_lines

    text = json.dumps(report.to_dict(), indent=2) if args.json else format_report(report)
    write_lines("-", [text])  # a full stdout (`> /dev/full`) is one line, exit 2
    return 0


def _run_dataset(args: argparse.Namespace) -> int:
    from aligners.data.datasets import load
    from aligners.data.gold import read_alignment_file

    if args.src_text is not None or args.tgt_text is not None:
        raise AlignersInputError("--dataset brings its own sentences; drop --src-text/--tgt-text")
    pairs = load(args.dataset, args.split, lenient=args.lenient)
    if not pairs or getattr(pairs[0], "alignment", None) is None:
        raise AlignersInputError(f"dataset {args.dataset!r} has no gold alignments")
    src = [p.src for p in pairs]
    tgt = [p.tgt for p in pairs]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        test = read_alignment_file(
            args.test,
            fmt=args.test_format,
            lenient=args.lenient,
            src_lengths=[len(s) for s in src],
            tgt_lengths=[len(t) for t in tgt],
        )
    for w in caught:
        print(f"aligners evaluate: warning: {w.message}", file=sys.stderr)
    return _report(args, [p.alignment for p in pairs], test, src, tgt)
