"""`aligners convert`: any gold/alignment notation -> Pharaoh (0-based), NAACL or 1-based.

    aligners convert -i test.wa.nonullalign --src test.e --tgt test.f -o gold.pharaoh
    aligners convert -i roen.gold --from onebased --text roen.src-tgt --to naacl
    aligners convert --dataset wpt-enhi --split test -o enhi.pharaoh   # registry gold

With `--src/--tgt` (or `--text` for one `src ||| tgt` file) links are checked against the
sentence lengths: out-of-range links are an error, or with `--lenient` dropped, counted and
reported on stderr. `<s snum=N>` text files also supply the NAACL sentence numbers.
`-o` follows `aligners.outputs` (never an input; atomic; `.gz` gzipped).
"""

from __future__ import annotations

import argparse
import sys

from aligners.commands.evaluate import printed_warnings
from aligners.data.gold import (
    FORMATS,
    read_alignment_file,
    read_snum_text,
    write_naacl,
    write_onebased,
)
from aligners.data.parallel import read_lines, read_parallel
from aligners.data.pharaoh import write_pharaoh
from aligners.data.types import Alignment
from aligners.errors import AlignersInputError
from aligners.outputs import check_paths, open_output

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--input", help="alignment file to convert ('-' = stdin)")
    parser.add_argument("--from", dest="fmt", default="auto", choices=FORMATS,
                        help="input notation (default: guess; 1-based i-j needs 'onebased')")
    parser.add_argument("--to", default="pharaoh", choices=("pharaoh", "naacl", "onebased"),
                        help="output notation (default: pharaoh, 0-based, source first)")
    parser.add_argument("-o", "--output", default="-", help="output file (- = stdout)")
    parser.add_argument("-s", "--src",
                        help="source text (plain or <s snum=N> lines) for range checks")
    parser.add_argument("-t", "--tgt", help="target text, as --src")
    parser.add_argument("--text", help="one 'src ||| tgt' file instead of --src/--tgt")
    parser.add_argument("--swap", action="store_true",
                        help="exchange source and target of every link (e.g. English-first Cs-En)")
    parser.add_argument("--lenient", action="store_true",
                        help="drop (and count) links outside their sentence instead of failing")
    parser.add_argument("--posteriors", action="store_true", help="keep ':p' posteriors (pharaoh)")
    parser.add_argument("--dataset", help="convert the gold of a registry dataset instead of -i")
    parser.add_argument("--split", default=None, help="split of --dataset")


def _side(path: str) -> tuple[list[int] | None, list[int]]:
    """(snums or None, sentence lengths) of a plain or `<s snum=N>` text file."""
    lines = list(read_lines(path))  # read once: `path` may be stdin
    if lines and lines[0].lstrip().startswith("<s snum"):
        rows = read_snum_text(path, lines=lines)
        return [s for s, _ in rows], [len(t) for _, t in rows]
    return None, [len(line.split()) for line in lines]


def run(args: argparse.Namespace) -> int:
    inputs = {"-i": args.input, "--src": args.src, "--tgt": args.tgt, "--text": args.text}
    check_paths(inputs, {"-o": args.output})
    snums = src_lengths = tgt_lengths = None
    if args.text and (args.src or args.tgt):
        raise AlignersInputError("give --text FILE or --src/--tgt, not both")
    if args.dataset:
        given = [flag for flag, path in inputs.items() if path]
        if given:
            raise AlignersInputError(f"--dataset converts the registry's gold: drop "
                                     f"{' '.join(given)}, or --dataset")
        from aligners.data.datasets import DATASETS, last_dropped, load

        pairs = load(args.dataset, args.split, lenient=args.lenient)
        if DATASETS[args.dataset].kind != "alignment" or pairs[0].alignment is None:
            raise AlignersInputError(f"dataset {args.dataset!r} has no gold alignments")
        alignments = [p.alignment for p in pairs]
        # the one split loaded (named, or the registry's default): the others dropped none
        dropped = sum(last_dropped(args.dataset, s) for s in DATASETS[args.dataset].splits)
        if dropped:
            print(f"aligners convert: dropped {dropped} out-of-range link(s)", file=sys.stderr)
    else:
        if not args.input:
            raise AlignersInputError("give -i/--input FILE or --dataset NAME")
        if args.split is not None:
            raise AlignersInputError("--split applies to --dataset only: drop it")
        if args.text:
            lengths = [(len(s), len(t)) for s, t in read_parallel(args.text)]
            src_lengths, tgt_lengths = [a for a, _ in lengths], [b for _, b in lengths]
        else:
            if args.src:
                snums, src_lengths = _side(args.src)
            if args.tgt:
                tgt_snums, tgt_lengths = _side(args.tgt)
                if snums is not None and tgt_snums is not None and snums != tgt_snums:
                    raise AlignersInputError(f"{args.src} and {args.tgt} differ in snums")
                snums = snums if snums is not None else tgt_snums
        if args.swap:
            src_lengths, tgt_lengths = tgt_lengths, src_lengths
        with printed_warnings("aligners convert"):  # out-of-range (lenient) and NULL-link
            alignments = read_alignment_file(  # drops, with their counts
                args.input, fmt=args.fmt, lenient=args.lenient, snums=snums,
                src_lengths=src_lengths, tgt_lengths=tgt_lengths)
    if args.swap:
        alignments = [_swap(al) for al in alignments]
    with open_output(args.output, flag="-o") as out:  # atomic; .gz by name
        if args.to == "pharaoh":
            write_pharaoh(alignments, out, posteriors=args.posteriors)
        elif args.to == "naacl":
            write_naacl(alignments, out, snums=snums)
        else:
            write_onebased(alignments, out)
    return 0


def _swap(al: Alignment) -> Alignment:
    posts = None if al.posteriors is None else {(j, i): p for (i, j), p in al.posteriors.items()}
    return Alignment(frozenset((j, i) for i, j in al.sure),
                     frozenset((j, i) for i, j in al.possible), posts)
