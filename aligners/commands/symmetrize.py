"""`aligners symmetrize -c HEURISTIC -i FWD -j REV`: atools-compatible symmetrization.

Both inputs are Pharaoh `i-j` files in source-target order (as fast_align/eflomal write
the reverse direction); the output (stdout or `-o FILE`, under `aligners.outputs`: never an
input, atomic, `.gz` gzipped) is Pharaoh, one line per pair, links sorted by (i, j) as atools
prints them. Example (shipped data):
    aligners symmetrize -c grow-diag-final-and \\
        -i ../shared/oracles/symmetrize/eflomal.enfr.fwd \\
        -j ../shared/oracles/symmetrize/eflomal.enfr.rev > enfr.gdfa
"""

from __future__ import annotations

import argparse
import re

from aligners.data.pharaoh import link_line
from aligners.errors import AlignersInputError
from aligners.symmetrize import HEURISTICS

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--command", required=True, choices=HEURISTICS, dest="heuristic",
                        metavar="HEURISTIC", help="one of: " + ", ".join(HEURISTICS))
    parser.add_argument("-i", "--input-1", required=True, dest="fwd",
                        help="forward alignment, Pharaoh i-j (source-target; '-' = stdin)")
    parser.add_argument("-j", "--input-2", required=True, dest="rev",
                        help="reverse alignment, also in source-target order (as fast_align -r)")
    parser.add_argument("-o", "--output", default="-", help="output file (- = stdout)")


# a line of plain `i-j` links (the common case, parsed without building `Alignment`s)
_PLAIN = re.compile(r"[ \t]*(?:\d+-\d+(?:[ \t]+\d+-\d+)*)?[ \t]*\Z", re.ASCII)


def _read_links(path: str) -> list[set[tuple[int, int]]]:
    """One link set per line. Plain `i-j` lines take a fast path; anything else (posteriors,
    possible-link marks, malformed tokens) goes through the Pharaoh reader, which raises
    `AlignersInputError` with file and line for bad input. Cost: O(file size)."""
    from aligners.data.parallel import read_lines
    from aligners.data.pharaoh import parse_pharaoh_line

    name = "<stdin>" if path == "-" else path
    out = []
    for n, text in enumerate(read_lines(path), start=1):
        if _PLAIN.match(text):
            out.append({(int(a), int(b)) for a, _, b in (t.partition("-") for t in text.split())})
        else:
            out.append(set(parse_pharaoh_line(text, path=name, line=n).possible))
    return out


def run(args: argparse.Namespace) -> int:
    from aligners.outputs import check_paths, write_lines
    from aligners.symmetrize import symmetrize

    if args.fwd == "-" and args.rev == "-":
        raise AlignersInputError("only one of -i / -j can be '-' (stdin)")
    check_paths({"-i": args.fwd, "-j": args.rev}, {"-o": args.output})
    fwd = _read_links(args.fwd)
    rev = _read_links(args.rev)
    if len(fwd) != len(rev):
        raise AlignersInputError(
            f"{args.fwd} has {len(fwd)} lines but {args.rev} has {len(rev)}; "
            "expected one line per sentence pair in both"
        )
    write_lines(args.output, (link_line(sorted(symmetrize(f, r, args.heuristic)))
                              for f, r in zip(fwd, rev)), flag="-o")
    return 0
