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
import contextlib
import json
import sys
import warnings

from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run", "TEXT_FORMATS", "read_sentences", "carried_pairs",
           "read_links", "printed_warnings"]

TEXT_FORMATS = ("jacana", "jacana-sp", "multimwa")  # formats whose files carry the sentences


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aligners.data.gold import FORMATS

    gold = parser.add_mutually_exclusive_group(required=True)
    gold.add_argument("--gold", help="gold alignment file")
    gold.add_argument("--dataset", help="gold from the dataset registry (e.g. hansards-enfr)")
    parser.add_argument("--split", help="split of --dataset (default: test or its only split)")
    parser.add_argument("--test", required=True, help="predicted alignment file")
    parser.add_argument("--format", default="auto", choices=FORMATS,
                        help="notation of --gold (auto: sniffed)")
    parser.add_argument("--test-format", default="auto", choices=FORMATS,
                        help="notation of --test")
    parser.add_argument("-s", "--src-text",
                        help="source sentences (enables the identity breakdown)")
    parser.add_argument("-t", "--tgt-text", help="target sentences")
    parser.add_argument("--lenient", action="store_true", help="drop (count, warn about) "
                        "links outside their sentence instead of failing")
    parser.add_argument("--alpha", type=float, default=0.5,
                        help="alpha of F_alpha (Fraser & Marcu)")
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


def read_sentences(src_path: str, tgt_path: str, why: str = ""):
    """(snums or None, source token lists, target token lists) of two sentence files (plain
    or WPT `<s snum=N>`), which must hold the same pairs."""
    snums, src = _read_text(src_path)
    tgt_snums, tgt = _read_text(tgt_path)
    if len(src) != len(tgt) or snums != tgt_snums:
        raise AlignersInputError(f"{src_path} and {tgt_path} hold different sentences "
                                 f"({len(src)} vs {len(tgt)} lines){why}")
    return snums, src, tgt


def carried_pairs(path: str, fmt: str, lenient: bool):
    """The pairs (tokens and links) of a file that carries its text (`TEXT_FORMATS`)."""
    from aligners.data.jacana import read_jacana_json, read_multimwa

    if fmt == "multimwa":
        return read_multimwa(path, lenient=lenient)
    return read_jacana_json(path, sure_plus_poss=fmt == "jacana-sp", lenient=lenient)


def read_links(path: str, fmt: str, *, snums, src, tgt, lenient: bool):
    """The alignments of `path` in notation `fmt`, checked against the sentences `src` /
    `tgt` when given (NAACL: numbered by `snums`)."""
    from aligners.data.gold import read_alignment_file

    lengths = {} if src is None else {"src_lengths": [len(s) for s in src],
                                      "tgt_lengths": [len(t) for t in tgt]}
    extra = {"snums": snums} if fmt in ("naacl", "naacl0") and snums else {}
    return read_alignment_file(path, fmt=fmt, lenient=lenient, **extra, **lengths)


@contextlib.contextmanager
def printed_warnings(prog: str):
    """Warnings raised in the block, each one line `PROG: warning: ...` on stderr after it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        print(f"{prog}: warning: {w.message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from aligners.config_checks import UNIT, check_value
    from aligners.data.gold import sniff_format
    from aligners.metrics import evaluate_alignments, format_report
    from aligners.outputs import write_lines

    if args.gold == "-" and args.test == "-":
        raise AlignersInputError("only one of --gold / --test can be '-' (stdin)")
    src = tgt = snums = pairs = None  # pairs: gold that carries its sentences
    if args.dataset is not None:
        from aligners.data.datasets import load

        if args.src_text is not None or args.tgt_text is not None:
            raise AlignersInputError("--dataset brings its own sentences; drop "
                                     "--src-text/--tgt-text")
        pairs = load(args.dataset, args.split, lenient=args.lenient)
        if not pairs or getattr(pairs[0], "alignment", None) is None:
            raise AlignersInputError(f"dataset {args.dataset!r} has no gold alignments")
    else:
        if (args.src_text is None) != (args.tgt_text is None):
            raise AlignersInputError("--src-text and --tgt-text go together; give both or "
                                     "neither")
        gold_fmt = sniff_format(args.gold) if args.format == "auto" else args.format
        if args.src_text is not None:
            snums, src, tgt = read_sentences(args.src_text, args.tgt_text)
    with printed_warnings("aligners evaluate"):
        if pairs is None and gold_fmt in TEXT_FORMATS:
            pairs = carried_pairs(args.gold, gold_fmt, args.lenient)
        if pairs is not None:
            gold, src, tgt = ([p.alignment for p in pairs], [p.src for p in pairs],
                              [p.tgt for p in pairs])
        else:
            gold = read_links(args.gold, gold_fmt, snums=snums, src=src, tgt=tgt,
                              lenient=args.lenient)
        test = read_links(args.test, args.test_format, snums=snums, src=src, tgt=tgt,
                          lenient=args.lenient)
    name = args.gold or args.dataset
    if len(gold) != len(test):
        raise AlignersInputError(f"{name} has {len(gold)} sentence pairs but {args.test} has "
                                 f"{len(test)}; expected the same pairs in the same order")
    if not gold:
        raise AlignersInputError(f"{name}: no sentence pairs; expected at least one to score")
    check_value("--alpha", args.alpha, UNIT)
    report = evaluate_alignments(gold, test, src_tokens=src, tgt_tokens=tgt, alpha=args.alpha)
    text = json.dumps(report.to_dict(), indent=2) if args.json else format_report(report)
    write_lines("-", [text])  # a full stdout (`> /dev/full`) is one line, exit 2
    return 0
