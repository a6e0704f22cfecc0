"""`aligners monoalign --model M.safetensors [--input PAIRS]`: align monolingual sentence pairs.

Input: one `source ||| target` pair per line (whitespace-tokenised), or a jacana JSON file
(`--input X.json`). Output: one line of Pharaoh `i-j` links (0-based, source-target) per pair;
`--blocks` adds ` ||| s:len-t:len ...` phrase blocks and `--score` the normalised score.
Example: `echo "he passed away ||| he died" | aligners monoalign --model OUT/model.s2t.safetensors`
"""

from __future__ import annotations

import argparse

from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="trained model.*.safetensors (+ .json)")
    parser.add_argument("--input", default="-", help="`src ||| tgt` lines or a .json file")
    parser.add_argument("--blocks", action="store_true", help="also print phrase blocks")
    parser.add_argument("--score", action="store_true", help="also print the normalised score")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)


def _read(path: str):
    """Pairs of `path` (`-` = stdin) via `aligners.data.parallel.read_parallel`: UTF-8 with
    a leading BOM stripped, LF or CRLF line ends; bad bytes, a missing file, a line without
    one ` ||| ` or an empty side raise `AlignersInputError` (file, 1-based line)."""
    from aligners.data.parallel import read_parallel
    from aligners.data.types import AlignedPair
    if path.endswith(".json"):
        from aligners.data.jacana import read_jacana_json
        return [AlignedPair(p.src, p.tgt) for p in read_jacana_json(path)]
    name = "<stdin>" if path == "-" else path
    pairs = []
    for n, (src, tgt) in enumerate(read_parallel(path), 1):
        if not src or not tgt:
            raise AlignersInputError(
                "expected 'source tokens ||| target tokens' (a side is empty)", path=name, line=n)
        pairs.append(AlignedPair(tuple(src), tuple(tgt)))
    return pairs


def run(args: argparse.Namespace) -> int:
    import torch

    from aligners.training.monolingual import featurise, load_model, predict
    torch.set_num_threads(args.threads)
    model, cfg = load_model(args.model)
    pairs = _read(args.input)
    if cfg.get("direction") == "t2s":
        from aligners.training.monolingual import _flip
        pairs = [_flip(p) for p in pairs]
    out = predict(model, featurise(pairs, model), batch_size=args.batch_size)
    flip = cfg.get("direction") == "t2s"
    for blocks, links, score in out:
        links = sorted((j, i) for i, j in links) if flip else links
        line = " ".join(f"{i}-{j}" for i, j in links)
        if args.blocks:
            line += " ||| " + " ".join(f"{s}:{k}-{t}:{lt}" for s, k, t, lt in blocks)
        if args.score:
            line += f" ||| {score:.4f}"
        print(line)
    return 0
