"""`aligners monoalign --model RUN/model [--input PAIRS]`: align monolingual sentence pairs.

Input: one `source ||| target` pair per line (whitespace-tokenised), `-s SRC -t TGT`, or a
jacana JSON file (`--input X.json`). Model: the folder a monolingual training run saved
(`RUN/model`, loaded with `aligners.load`; no Lightning is imported); several `--model`
folders (or a saved ensemble) decode as an ensemble by mean link posterior
(`aligners.models.mono.ensemble`). Output, one line per pair: Pharaoh `i-j` links (0-based,
source-target order, also for a t2s model); `--blocks` appends ` ||| ` and the phrase blocks
`s:k-t:l` (source tokens s..s+k-1 aligned as one block to target tokens t..t+l-1, 0-based,
source-target order); `--score` appends ` ||| ` and the normalised score
(`MonoAligner.align`). `--decode`, `--threshold`, `--combine`, `--encoder-precision`: see
their help and docs/monolingual.md. A pair with more than `--max-tokens` tokens (default
`MAX_TOKENS`) on a side is left unaligned: an empty output line and a one-line warning on
stderr (a pair costs about 4 kB x source x target tokens: 1,000 x 1,000 tokens needed 4 GB).
Example: `echo "the cat sat on the mat ||| a cat was sitting on the mat" |
aligners monoalign --model RUN/model --blocks`
"""

from __future__ import annotations

import argparse

from aligners.cli_types import int_at_least
from aligners.data.pharaoh import link_line
from aligners.errors import AlignersInputError
from aligners.models.mono.config import COMBINES, DECODES, PRECISIONS, MonoConfig, MonoTraining

__all__ = ["add_arguments", "run", "MAX_TOKENS"]

MAX_TOKENS = 256  # longer pairs are left unaligned (the CRFs' memory grows as I x J)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR", action="append",
                        help="model folder saved by a monolingual training run (RUN/model); "
                             "repeat it to decode the ensemble of several (mean posterior)")
    parser.add_argument("-i", "--input", default=None,
                        help="`src ||| tgt` lines or a jacana .json file (default: stdin)")
    parser.add_argument("-s", "--source", default=None,
                        help="source sentences, one per line (with -t, instead of -i)")
    parser.add_argument("-t", "--target", default=None,
                        help="target sentences, line-aligned with -s")
    parser.add_argument("--direction", choices=("s2t", "t2s"), default=None,
                        help="which saved direction decodes (default: the first the model has)")
    parser.add_argument("--blocks", action="store_true",
                        help="also print phrase blocks `s:k-t:l` (source-target order)")
    parser.add_argument("--score", action="store_true", help="also print the normalised score")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="pairs decoded together (>= 1; default 64, neural aligner 32)")
    parser.add_argument("--max-tokens", type=int_at_least(1), default=MAX_TOKENS,
                        help="pairs with more tokens on a side are left unaligned (an empty "
                             "line and a warning): the memory bound")
    parser.add_argument("--threads", type=int, default=MonoTraining.threads,
                        help="torch intra-op threads (>= 1; more than the CPU cores: the "
                             "cores, with a warning)")
    d = MonoConfig  # the model's decoding defaults (the monolingual task's too)
    parser.add_argument("--decode", choices=DECODES, default=d.decode,
                        help=f"viterbi (best path) or posterior (links whose posterior "
                             f"exceeds --threshold); default {d.decode}")
    parser.add_argument("--threshold", type=float, default=d.threshold,
                        help=f"posterior decoding: keep links with posterior > T, 0 <= T < 1 "
                             f"(default {d.threshold})")
    parser.add_argument("--combine", default=d.combine, choices=COMBINES,
                        help=f"combine both saved directions: union, intersect, grow-diag, or "
                             f"posterior (mean link posterior > --threshold); default {d.combine}")
    parser.add_argument("--encoder-precision", choices=PRECISIONS, default=d.encoder_precision,
                        help="neural aligner: the encoder's inference precision (default: "
                             "the aligner's; int8 on the CPU only)")
    parser.add_argument("--device", default="cpu",
                        help="torch device that decodes (cpu, cuda, cuda:1; default cpu)")


def _read_pairs(args: argparse.Namespace):
    """Pairs from `-i FILE` (`src ||| tgt` lines or a jacana .json; default stdin) or from
    `-s SRC -t TGT` (two line-aligned files, as `aligners align`), through
    `aligners.data.parallel.read_parallel`: UTF-8 with a leading BOM stripped, LF or CRLF line
    ends; bad bytes, a missing file, a line without one ` ||| ` or an empty side raise
    `AlignersInputError` (file, 1-based line)."""
    from aligners.data.parallel import read_parallel
    from aligners.data.types import AlignedPair

    if args.source is None and args.target is None:
        path = args.input or "-"
        if path.endswith(".json"):
            from aligners.data.jacana import read_jacana_json
            return [AlignedPair(p.src, p.tgt) for p in read_jacana_json(path)]
        files, what = (path,), "'source tokens ||| target tokens'"
        where = lambda src: "<stdin>" if path == "-" else path  # noqa: E731
    elif args.input is not None:
        raise AlignersInputError("give either -i or -s/-t, not both")
    elif args.source is None or args.target is None:
        raise AlignersInputError("give both -s SRC and -t TGT (or -i FILE with 'src ||| tgt')")
    else:
        files, what = (args.source, args.target), "a sentence on both sides"
        where = lambda src: args.source if not src else args.target  # noqa: E731
    pairs = []
    for n, (src, tgt) in enumerate(read_parallel(*files), 1):
        if not src or not tgt:
            raise AlignersInputError(f"expected {what} (a side is empty)", path=where(src),
                                     line=n)
        pairs.append(AlignedPair(tuple(src), tuple(tgt)))
    return pairs


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aligners.config_checks import Rule, check_options, rules_of

    rules = {"threads": rules_of(MonoTraining)["threads"],
             "threshold": rules_of(MonoConfig)["threshold"]}
    if args.batch_size is not None:  # None: the aligner's own batch
        rules["batch_size"] = Rule("int", lo=1)
    check_options(args, rules)
    from aligners.commands._device import thread_count

    threads = thread_count(args.threads, prog="aligners monoalign")
    models, combine = args.model, args.combine
    for folder in models:  # before the input is read and torch is imported
        if not Path(folder).is_dir():
            raise AlignersInputError("no model folder here (expected the `model` folder of a "
                                     "monolingual training run)", path=folder)
    if len(models) > 1 and combine not in ("none", "posterior"):
        raise AlignersInputError(f"several --model folders decode as an ensemble, by mean "
                                 f"posterior only: use --combine posterior or none, not "
                                 f"{combine!r}")
    pairs = _read_pairs(args)  # bad input fails fast, before torch is imported
    keep = _within_limit(pairs, args.max_tokens)
    import torch

    from aligners.commands._device import torch_device
    from aligners.models.mono.ensemble import load_aligners
    from aligners.outputs import write_lines

    torch.set_num_threads(threads)
    device = torch_device(args.device or "cpu")
    aligner = load_aligners(models).to(device)
    precision = args.encoder_precision
    kinds = sorted({m.kind for m in getattr(aligner, "members", [aligner])})
    if precision is not None and "neural" not in kinds:
        raise AlignersInputError(f"--encoder-precision applies to the neural aligner only; "
                                 f"this model is a {' + '.join(kinds)} CRF: drop it")
    out = aligner.align([pairs[r] for r in keep], direction=args.direction,
                        batch_size=args.batch_size, decode=args.decode, threshold=args.threshold,
                        encoder_precision=precision, combine=combine) if keep else []
    rows = dict(zip(keep, out))
    write_lines("-", (_line(args, *rows[r]) if r in rows else "" for r in range(len(pairs))))
    args.summary = f"{len(pairs)} sentence pairs aligned"
    return 0


def _within_limit(pairs, max_tokens: int) -> list[int]:
    """The rows of `pairs` with at most `max_tokens` tokens a side; each other one is named
    in a one-line warning (`aligners.data.warn_too_long`, as for the word families)."""
    from aligners.data import warn_too_long

    keep = []
    for r, p in enumerate(pairs):
        if max(len(p.src), len(p.tgt)) > max_tokens:
            warn_too_long(r, len(p.src), len(p.tgt), max_tokens=max_tokens)
        else:
            keep.append(r)
    return keep


def _line(args: argparse.Namespace, blocks, links, score) -> str:
    """One output line: Pharaoh links [` ||| ` blocks] [` ||| ` score]."""
    line = link_line(links)
    if args.blocks:
        line += " ||| " + " ".join(f"{s}:{k}-{t}:{lt}" for s, k, t, lt in blocks)
    if args.score:
        line += f" ||| {score:.4f}"
    return line
