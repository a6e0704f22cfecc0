"""`aligners show`: look at alignments, as a grid in the terminal or as one HTML page.

    aligners show -s test.e -t test.f -a pred.align --gold test.wa.nonullalign --pair 3
    aligners show -i corpus.src-tgt -a pred.align --pairs 10-20 --no-color
    aligners show -s test.e -t test.f --gold G -a A --test B --html page.html
    aligners show --gold msr.edinburgh.test.json -a pred.align --html mono.html

Inputs are read by `aligners evaluate`'s readers (sentences from -s/-t, -i or a links file
that carries its text; links in any notation of `aligners.data.gold.FORMATS`); pairs are
numbered 1..N in file order; scores are `aligners evaluate`'s. See docs/show.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from aligners.commands.evaluate import (
    TEXT_FORMATS,
    carried_pairs,
    printed_warnings,
    read_links,
    read_sentences,
)
from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run"]


def _pair_range(text: str) -> tuple[int, int]:
    first, sep, last = text.partition("-")
    try:
        a, b = int(first), int(last if sep else first)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected A-B (1-based pair numbers), got {text!r}") from None
    if not 1 <= a <= b:
        raise argparse.ArgumentTypeError(f"expected 1 <= A <= B, got {text!r}")
    return a, b


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a pair number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"pair numbers start at 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from aligners.data.gold import FORMATS

    text = parser.add_argument_group("sentences (not needed when a file carries its text)")
    text.add_argument("-s", "--source", help="source sentences, one per line (or WPT <s snum>)")
    text.add_argument("-t", "--target", help="target sentences, one per line")
    text.add_argument("-i", "--input", help="'source ||| target' file, as `aligners align -i`")
    links = parser.add_argument_group("links")
    links.add_argument("-a", "--test", action="append", metavar="LINKS", default=None,
                       help="predicted links; repeat (-a A -a B) to show systems side by side")
    links.add_argument("--label", action="append", metavar="NAME", default=None,
                       help="name of the -a system in the same place (default: its file name)")
    links.add_argument("--gold", help="gold links: hits, misses and false links, scores")
    links.add_argument("--format", default="auto", choices=FORMATS,
                       help="notation of --gold (auto: sniffed)")
    links.add_argument("--test-format", default="auto", choices=FORMATS,
                       help="notation of every -a file (auto: sniffed per file)")
    links.add_argument("--lenient", action="store_true",
                       help="drop (count, warn about) links outside their sentence")
    out = parser.add_argument_group("output")
    which = out.add_mutually_exclusive_group()
    which.add_argument("--pair", type=_positive, metavar="N", help="show pair N only (1-based)")
    which.add_argument("--pairs", type=_pair_range, metavar="A-B",
                       help="show pairs A..B (1-based, inclusive)")
    out.add_argument("--html", metavar="PAGE",
                     help="write one self-contained HTML page with every pair instead")
    out.add_argument("--title", help="the page's title (default: the files shown)")
    out.add_argument("--no-color", action="store_true",
                     help="no ANSI colours (default: colours only when stdout is a terminal "
                          "and NO_COLOR is unset)")


def _read_links(path: str, fmt: str, *, snums, src, tgt, lenient: bool):
    """The alignments of `path`, checked against the sentences: one per pair, in range."""
    from aligners.data.pharaoh import check_ranges, warn_dropped

    als = read_links(path, fmt, snums=snums, src=src, tgt=tgt, lenient=lenient)
    if fmt in (*TEXT_FORMATS, "a3"):  # these readers check against their own text only
        if len(als) != len(src):
            raise AlignersInputError(f"{len(als)} sentence pairs but the sentences are "
                                     f"{len(src)}; expected the same pairs in the same order",
                                     path=path)
        als, dropped = check_ranges(als, src_lengths=[len(x) for x in src],
                                    tgt_lengths=[len(x) for x in tgt], lenient=lenient,
                                    path=path)
        warn_dropped(dropped, path)
    return als


def _load(args):
    """(src, tgt, ids, gold or None, [(name, alignments)]) from the arguments."""
    from aligners.data.gold import sniff_format
    from aligners.data.parallel import read_parallel

    tests = args.test or []
    if not tests and args.gold is None:
        raise AlignersInputError("nothing to show: give predicted links (-a LINKS), --gold "
                                 "GOLD, or both")
    if args.label is not None and len(args.label) != len(tests):
        raise AlignersInputError(f"{len(args.label)} --label for {len(tests)} -a files; "
                                 "expected one each, in the same order")
    inputs = [p for p in (args.source, args.target, args.input, args.gold, *tests) if p]
    if inputs.count("-") > 1:
        raise AlignersInputError("only one input can be '-' (stdin)")
    if args.input is not None and (args.source or args.target):
        raise AlignersInputError("give -i FILE or -s SRC -t TGT, not both")
    if (args.source is None) != (args.target is None):
        raise AlignersInputError("-s/--source and -t/--target go together; give both")
    gold_fmt = None if args.gold is None else (
        sniff_format(args.gold) if args.format == "auto" else args.format)
    test_fmts = [sniff_format(t) if args.test_format == "auto" else args.test_format
                 for t in tests]
    carriers = [(p, f) for p, f in ((args.gold, gold_fmt), *zip(tests, test_fmts))
                if p is not None and f in TEXT_FORMATS]
    snums = ids = None
    if args.input is not None or args.source is not None:
        if gold_fmt in TEXT_FORMATS:
            raise AlignersInputError(f"{args.gold} carries its own sentences; drop -s/-t/-i")
        if args.input is not None:
            pairs = list(read_parallel(args.input))
            src, tgt = [s for s, _ in pairs], [t for _, t in pairs]
        else:
            snums, src, tgt = read_sentences(args.source, args.target,
                                             "; expected one sentence pair per line")
            ids = None if snums is None else [str(s) for s in snums]
    elif carriers:
        pairs = carried_pairs(*carriers[0], args.lenient)
        src, tgt = [list(p.src) for p in pairs], [list(p.tgt) for p in pairs]
        ids = [p.id for p in pairs]
    else:
        raise AlignersInputError("no sentences: give -s SRC -t TGT or -i FILE (or links that "
                                 "carry their text: jacana JSON, MultiMWA TSV)")
    if not src:
        raise AlignersInputError("no sentence pairs; expected at least one to show",
                                 path=args.input or args.source or carriers[0][0])
    read = {"snums": snums, "src": src, "tgt": tgt, "lenient": args.lenient}
    gold = None if args.gold is None else _read_links(args.gold, gold_fmt, **read)
    systems = [(t, _read_links(t, f, **read)) for t, f in zip(tests, test_fmts)]
    for path, als in ([(args.gold, gold)] if gold is not None else []) + systems:
        if len(als) != len(src):
            raise AlignersInputError(
                f"{path} has {len(als)} sentence pairs but the sentences are {len(src)}; "
                "expected the same pairs in the same order")
    names = [Path(t).name for t in tests]
    if len(set(names)) < len(names):
        names = list(tests)
    if args.label is not None:
        names = list(args.label)
    return src, tgt, ids, gold, [(n, als) for n, (_, als) in zip(names, systems)], inputs


MAX_GRID_TOKENS = 200  # a terminal grid is drawn for pairs up to this many tokens a side


def run(args: argparse.Namespace) -> int:
    from aligners.outputs import check_paths, open_output
    from aligners.show.grid import legend, render_pair
    from aligners.show.view import corpus_view, pair_view, shown_classes

    if args.html is not None and (args.pair is not None or args.pairs is not None):
        raise AlignersInputError("--pair/--pairs pick grids for the terminal; the --html page "
                                 "holds every pair")
    tests = args.test or []  # every input and the --html page, before any work
    named = {f"-a {t}" if len(tests) > 1 else "-a": t for t in tests}
    check_paths({"-s": args.source, "-t": args.target, "-i": args.input, "--gold": args.gold,
                 **named}, {"--html": args.html})
    with printed_warnings("aligners show"):
        src, tgt, ids, gold, systems, inputs = _load(args)
    count = len(src)
    if args.html is not None:
        from aligners.show.page import render_page

        view = corpus_view(src, tgt, gold, systems, ids=ids)
        shown = [name for name, _ in systems] + ([f"gold {Path(args.gold).name}"] if gold
                                                 is not None else [])
        page = render_page(view, title=args.title or "aligners show: " + ", ".join(shown))
        with open_output(args.html, flag="--html") as out:
            out.write(page)
        if not args.quiet and args.html != "-":
            print(f"aligners show: wrote {args.html} ({count} sentence pairs)", file=sys.stderr)
        return 0
    first, last = (args.pair, args.pair) if args.pair else args.pairs or (1, count)
    if last > count:
        raise AlignersInputError(
            f"pair {last} is out of range: {inputs[0]} holds {count} sentence pairs; expected "
            f"1..{count}")
    color = (not args.no_color and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    names = [name for name, _ in systems] or ["gold"]
    with open_output("-") as out:  # `> /dev/full`: one line
        for n in range(first - 1, last):
            if max(len(src[n]), len(tgt[n])) > MAX_GRID_TOKENS:
                out.write(f"pair {n + 1}: {len(src[n])} x {len(tgt[n])} tokens, not drawn "
                          f"(grids up to {MAX_GRID_TOKENS} tokens a side; see it with "
                          "--html)\n\n")
                continue
            view = pair_view(n + 1, src[n], tgt[n], None if gold is None else gold[n],
                             [als[n] for _, als in systems],
                             pair_id=None if ids is None else ids[n])
            out.write(render_pair(view, names, count, color=color) + "\n\n")
        out.write(legend(shown_classes(gold=gold is not None, pred=bool(systems)),
                         color=color) + "\n")
    return 0
