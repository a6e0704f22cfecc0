"""`aligners align --model gappy-hsmm`: the phrasal / gappy HSMM aligner by agreement
(Bansal et al. 2011) behind the same I/O as the word aligner (see `align`).

Training: Model 1 -> word HMM (both directions, no agreement), then the phrasal model with
agreement (`--phrasal-iterations`, `--no-gappy`). Decoding: agreement (product of the two
directions' link posteriors > threshold, many-to-many), posterior or Viterbi per direction
then `--symmetrize`. `--posteriors` writes each link's posterior (agreement: the product).
"""

from __future__ import annotations

import sys

import numpy as np

from aligners.errors import AlignersInputError

__all__ = ["run_phrasal"]


def _lines(links_per_pair, mats, which):
    out = []
    for links, (lf, lb) in zip(links_per_pair, mats):
        if which is None:
            out.append(" ".join(f"{i}-{j}" for i, j in links))
            continue
        if which == "agreement":
            post = lf * lb
        elif which == "max":
            post = np.maximum(lf, lb)
        else:
            post = lf if which == "fwd" else lb
        out.append(" ".join(f"{i}-{j}:{float(post[i, j]):.4g}" for i, j in links))
    return out


def run_phrasal(args, pairs, show: bool) -> int:
    """Train or load, then write -f/-r/-o like `align.run`; returns the exit status."""
    import torch
    from tqdm import tqdm

    from aligners.data.bitext import build_index
    from aligners.data.vocab import WordIds
    from aligners.export import load, write_model
    from aligners.models.phrasal.decode import decode, fit_phrasal, link_matrices
    from aligners.models.phrasal.io import KIND, PhrasalBundle, phrasal_parts

    saved: dict = {}
    if args.load_model:
        bundle = load(args.load_model)
        if not isinstance(bundle, PhrasalBundle):
            raise AlignersInputError(f"--load-model: not a {KIND} model (use --model hmm)",
                                     path=args.load_model)
        model, src_ids, tgt_ids, saved = (bundle.aligner, bundle.src_ids, bundle.tgt_ids,
                                          bundle.decoding)
        index = build_index(pairs, src_ids, tgt_ids, cells=args.batch_cells,
                            keys=model.word_keys, cache_dir=args.cache_dir)
        model.to(args.device)
    else:
        from aligners.models.phrasal import PhrasalConfig, build_phrasal_aligner
        from aligners.models.word.agreement import WordAlignConfig, WordAligner

        src_ids, tgt_ids = WordIds(), WordIds()
        index = build_index(pairs, src_ids, tgt_ids, cells=args.batch_cells,
                            cache_dir=args.cache_dir)
        src_ids.frozen = tgt_ids.frozen = True
        word = WordAligner.from_index(index, WordAlignConfig(
            ibm1_iterations=args.ibm1_iterations, hmm_iterations=args.hmm_iterations,
            agreement=False, p0=args.p0, max_jump=args.max_jump, alpha=args.alpha))
        word.to(args.device)
        word.reset_counts()
        bar = tqdm(total=word.n_iterations * len(index), desc="word EM", disable=not show,
                   file=sys.stderr)
        word.fit(index, progress=lambda it, k: bar.update(1))
        bar.close()
        word.cpu()
        p0 = {} if args.phrasal_p0 is None else {"p0": args.phrasal_p0}
        config = PhrasalConfig(iterations=args.phrasal_iterations, gappy=not args.no_gappy,
                               **p0)
        layouts = []  # each batch's phrase layout, matched by the build, reused by iteration 1
        model, _ = build_phrasal_aligner(word, index, config, layouts=layouts)
        del word
        model.to(args.device)
        bar = tqdm(total=config.iterations * len(index), desc="phrasal EM", disable=not show,
                   file=sys.stderr)
        fit_phrasal(model, index, progress=lambda it, k: bar.update(1), layouts=layouts)
        bar.close()
    method = args.decoding or saved.get("method", "agreement")
    threshold = args.threshold if args.threshold is not None else saved.get("threshold", 0.3)
    heuristic = args.symmetrize or (saved.get("heuristic") if args.decoding is None else None)
    heuristic = heuristic or ("none" if method == "agreement" else "grow-diag-final-and")
    if args.save_model:
        try:
            write_model(args.save_model, **phrasal_parts(
                model, src_ids, tgt_ids,
                decoding={"method": method, "threshold": threshold, "heuristic": heuristic}))
        except OSError as err:
            raise AlignersInputError(f"--save-model: cannot write the model: {err.strerror}",
                                     path=args.save_model) from None
    with torch.no_grad():
        mats = link_matrices(model, index, viterbi=method == "viterbi")
    th = 0.5 if method == "viterbi" else float(threshold)
    outputs = {}
    if args.forward_links:
        links = [[tuple(x) for x in zip(*(lf > th).nonzero())] for lf, _ in mats]
        outputs[args.forward_links] = _lines(links, mats, "fwd" if args.posteriors else None)
    if args.reverse_links:
        links = [[tuple(x) for x in zip(*(lb > th).nonzero())] for _, lb in mats]
        outputs[args.reverse_links] = _lines(links, mats, "bwd" if args.posteriors else None)
    if args.output is not None or args.symmetrize is not None or not outputs:
        links = decode(mats, method=method, threshold=th, heuristic=heuristic)
        which = ("agreement" if method == "agreement" else "max") if args.posteriors else None
        outputs[args.output or "-"] = _lines(links, mats, which)
    from aligners.commands.align import _write

    for dest, lines in outputs.items():
        _write(dest, lines)
    return 0
