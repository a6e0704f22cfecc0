"""`aligners align`: word-align a bitext (IBM1 -> HMM, both directions, by agreement).

    aligners align -i corpus.src-tgt --symmetrize grow-diag-final-and > out.align
    aligners align -s text.en -t text.fr -f fwd.align -r rev.align --save-model model/
    aligners align -i new.src-tgt --load-model model/ --posteriors > new.align

Output: Pharaoh `i-j` (0-based, source-target order for both directions). Without -f/-r/
--symmetrize, stdout gets the symmetrized links of the chosen decoding (agreement decoding
is symmetric already) — with --symmetrize, that heuristic; -f/-r write each direction.
"""

from __future__ import annotations

import argparse
import sys

from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    io = p.add_argument_group("input / output")
    io.add_argument("-i", "--input", help="'source ||| target' file ('-' = stdin)")
    io.add_argument("-s", "--source", help="source file, one sentence per line ('-' = stdin)")
    io.add_argument("-t", "--target", help="target file, one sentence per line")
    io.add_argument("-f", "--forward-links", help="write forward links (source-target order)")
    io.add_argument("-r", "--reverse-links", help="write reverse links (source-target order)")
    io.add_argument("-o", "--output", default="-", help="symmetrized links (default stdout)")
    io.add_argument("--symmetrize", default=None, metavar="HEURISTIC",
                    help="atools heuristic for stdout/-o (intersect, union, grow-diag, "
                         "grow-diag-final, grow-diag-final-and); default: none for agreement "
                         "decoding, grow-diag-final-and otherwise")
    io.add_argument("--posteriors", action="store_true", help="write links as i-j:p")
    io.add_argument("--lowercase", action="store_true", help="lowercase the input")
    m = p.add_argument_group("model")
    m.add_argument("--save-model", metavar="DIR", help="save the trained model (safetensors)")
    m.add_argument("--load-model", metavar="DIR", help="align with a saved model, no training")
    m.add_argument("--ibm1-iterations", type=int, default=5)
    m.add_argument("--hmm-iterations", type=int, default=5)
    m.add_argument("--no-agreement", action="store_true", help="train the directions apart")
    m.add_argument("--p0", type=float, default=0.1, help="HMM NULL probability")
    m.add_argument("--max-jump", type=int, default=10)
    m.add_argument("--alpha", type=float, default=0.0, help="Dirichlet prior (VB), 0 = EM")
    d = p.add_argument_group("decoding")
    d.add_argument("--decoding", choices=("viterbi", "posterior", "agreement"), default=None,
                   help="default: the saved model's, else agreement")
    d.add_argument("--threshold", type=float, default=None,
                   help="posterior threshold (default: the saved model's, else 0.3)")
    r = p.add_argument_group("running")
    r.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    r.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    r.add_argument("--batch-cells", type=int, default=1_000_000,
                   help="padded source x target cells per batch")
    r.add_argument("--cache-dir", default=None,
                   help="keep the pair-id index in memory-mapped files here (large corpora)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")


def _read(args):
    from aligners.data.parallel import read_parallel

    if args.input is not None:
        if args.source or args.target:
            raise AlignersInputError("give either -i or -s/-t, not both")
        return read_parallel(args.input, lowercase=args.lowercase)
    if not (args.source and args.target):
        raise AlignersInputError("give -i FILE ('src ||| tgt') or both -s SRC and -t TGT")
    return read_parallel(args.source, args.target, lowercase=args.lowercase)


def run(args: argparse.Namespace) -> int:
    import torch
    from tqdm import tqdm

    from aligners.inference.decode import decode_lines
    from aligners.models._lexical import build_index
    from aligners.training.export import load_word_aligner, save_word_aligner

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise AlignersInputError(f"--device {args.device}: CUDA is not available")
    torch.set_num_threads(max(1, args.threads))
    pairs = _read(args)
    show = not args.quiet and sys.stderr.isatty()
    decoding: dict = {}
    if args.load_model:
        model, src_ids, tgt_ids, decoding = load_word_aligner(args.load_model)
        model.to(args.device)  # the index stays on the CPU; batches follow the model
        index = build_index(pairs, src_ids, tgt_ids, cells=args.batch_cells, keys=model.keys,
                            cache_dir=args.cache_dir)
    else:
        from aligners.models._lexical import WordIds
        from aligners.models.word_aligner import WordAlignConfig, WordAligner

        src_ids, tgt_ids = WordIds(), WordIds()
        index = build_index(pairs, src_ids, tgt_ids, cells=args.batch_cells,
                            cache_dir=args.cache_dir)
        config = WordAlignConfig(
            ibm1_iterations=args.ibm1_iterations, hmm_iterations=args.hmm_iterations,
            agreement=not args.no_agreement, p0=args.p0, max_jump=args.max_jump,
            alpha=args.alpha,
        )
        model = WordAligner.from_index(index, config).to(args.device)
        model.reset_counts()
        bar = tqdm(total=model.n_iterations * len(index), desc="EM", disable=not show,
                   file=sys.stderr)
        model.fit(index, progress=lambda it, k: bar.update(1))
        bar.close()
    method = args.decoding or decoding.get("method", "agreement")
    threshold = args.threshold if args.threshold is not None else decoding.get("threshold", 0.3)
    saved_sym = decoding.get("symmetrize") if args.decoding is None else None
    if args.save_model:
        save_word_aligner(args.save_model, model, src_ids, tgt_ids,
                          decoding={"method": method, "threshold": threshold,
                                    **({"symmetrize": args.symmetrize} if args.symmetrize else {})})
    want = []
    if args.forward_links:
        want.append("fwd")
    if args.reverse_links:
        want.append("rev")
    heuristic = args.symmetrize
    if heuristic is None:
        heuristic = saved_sym or ("none" if method == "agreement" else "grow-diag-final-and")
    if args.symmetrize is not None or not want:
        want.append("sym")
    bar = tqdm(total=index.n_sentences, desc="align", disable=not show, file=sys.stderr)
    lines = decode_lines(model, index, method=method, threshold=threshold, heuristic=heuristic,
                         posteriors=args.posteriors, outputs=tuple(want), progress=bar.update)
    bar.close()
    for name, dest in (("fwd", args.forward_links), ("rev", args.reverse_links),
                       ("sym", args.output)):
        if name in lines:
            _write(dest, lines[name])
    return 0


def _write(dest: str, lines: list[str]) -> None:
    if dest == "-":
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
        return
    with open(dest, "w", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
