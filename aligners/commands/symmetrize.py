"""`aligners symmetrize -c HEURISTIC -i FWD -j REV`: atools-compatible symmetrization.

Both inputs are Pharaoh `i-j` files in source-target order (as fast_align/eflomal write
the reverse direction); the output (stdout or `-o FILE`) is Pharaoh, one line per pair,
links sorted by (i, j) as atools prints them. Example (shipped data):
    aligners symmetrize -c grow-diag-final-and \\
        -i ../shared/oracles/symmetrize/eflomal.enfr.fwd \\
        -j ../shared/oracles/symmetrize/eflomal.enfr.rev > enfr.gdfa
"""

from __future__ import annotations

import argparse

from aligners.errors import AlignersInputError
from aligners.symmetrize import HEURISTICS

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--command", required=True, choices=HEURISTICS, dest="heuristic")
    parser.add_argument("-i", "--input-1", required=True, dest="fwd", help="forward alignment")
    parser.add_argument("-j", "--input-2", required=True, dest="rev", help="reverse alignment")
    parser.add_argument("-o", "--output", default="-", help="output file (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from aligners.data.parallel import open_output
    from aligners.data.pharaoh import read_pharaoh
    from aligners.symmetrize import symmetrize

    if args.fwd == "-" and args.rev == "-":
        raise AlignersInputError("only one of -i / -j can be '-' (stdin)")
    fwd = read_pharaoh(args.fwd)
    rev = read_pharaoh(args.rev)
    if len(fwd) != len(rev):
        raise AlignersInputError(
            f"{args.fwd} has {len(fwd)} lines but {args.rev} has {len(rev)}; "
            "expected one line per sentence pair in both"
        )
    with open_output(args.output) as out:
        for f, r in zip(fwd, rev):
            links = sorted(symmetrize(f.possible, r.possible, args.heuristic))
            out.write(" ".join(f"{i}-{j}" for i, j in links) + "\n")
    return 0
