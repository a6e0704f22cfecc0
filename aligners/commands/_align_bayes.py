"""`aligners align --model bayesian`: the Bayesian aligner (collapsed Gibbs sampling,
Östling & Tiedemann 2016) behind the word aligner's I/O (helper of aligners/commands/align.py,
not a subcommand of its own).

    aligners align --model bayesian -s text.ro -t text.en --save-model m/ > out.align
    aligners align -s new.ro -t new.en --load-model m/ --posteriors > new.align

Training and alignment are one sampling pass. With --load-model the saved counts are
Dirichlet pseudo-counts (priors) while the new text is sampled (eflomal's priors workflow):
no retraining of the old text. Decoding: argmax of the averaged marginals per direction
(`--decoding viterbi`, the default) or a posterior threshold (`--decoding posterior`), then
--symmetrize (default grow-diag-final-and). `--posteriors` writes `i-j:p` with the averaged
marginals (mean of both directions for symmetrized links). `--sampler batched --device cuda`
runs the approximate block sampler (aligners/models/bayes/batched.py) on a GPU.
"""

from __future__ import annotations

import argparse
import sys

from aligners.errors import AlignersInputError

__all__ = ["add_bayes_arguments", "run_bayes"]


def add_bayes_arguments(p: argparse.ArgumentParser) -> None:
    b = p.add_argument_group("bayesian model (--model bayesian)")
    b.add_argument("--seed", type=int, default=0, help="sampler seed (runs are reproducible)")
    b.add_argument("--samplers", type=int, default=None, help="independent samplers (3)")
    b.add_argument("--length", type=float, default=None,
                   help="relative number of sweeps (1.0 = eflomal's schedule)")
    b.add_argument("--null-prior", type=float, default=None, help="NULL probability (0.2)")
    b.add_argument("--stages", type=int, choices=(1, 2, 3), default=None,
                   help="1 IBM1, 2 +HMM, 3 +fertility (default 3)")
    b.add_argument("--sampler-threads", type=int, choices=(1, 2), default=2,
                   help="2: both directions in parallel (default)")
    b.add_argument("--sampler", choices=("exact", "batched"), default=None,
                   help="exact: the sequential numba sampler (default, CPU); batched: the "
                        "approximate block sampler on torch tensors (runs on --device)")


def _config(args):
    from aligners.models.bayes import BayesConfig

    kw = {"threads": args.sampler_threads, "lowercase": True, "device": args.device}
    if args.sampler is not None:
        kw["sampler"] = args.sampler
    for flag, name in (("samplers", "n_samplers"), ("length", "rel_iterations"),
                       ("null_prior", "p_null"), ("stages", "model")):
        if getattr(args, flag) is not None:
            kw[name] = getattr(args, flag)
    try:
        cfg = BayesConfig(**kw)
        cfg.check()
    except ValueError as err:
        raise AlignersInputError(f"--model bayesian: {err}") from None
    return cfg


def run_bayes(args: argparse.Namespace, pairs, write) -> int:
    """Sample, decode and write; `pairs` yields (source tokens, target tokens)."""
    from aligners.models.bayes import BayesAligner
    from aligners.models.bayes.decode import link_lines
    from aligners.models.bayes.io import load_bayes_aligner, save_bayes_aligner
    from aligners.symmetrize import HEURISTICS

    if args.device != "cpu":
        if args.sampler != "batched":
            raise AlignersInputError(f"--device {args.device}: the Bayesian aligner's exact "
                                     "sampler runs on the CPU; use --device cpu, or "
                                     "--sampler batched")
        from aligners.commands._device import torch_device

        torch_device(args.device)
    if args.decoding == "agreement":
        raise AlignersInputError("--decoding agreement is for --model hmm; the Bayesian "
                                 "model decodes by viterbi (argmax) or posterior")
    decoding = {}
    if args.load_model:
        model = load_bayes_aligner(args.load_model)
        decoding = model.decoding
        model.config.threads = args.sampler_threads
        model.config.device = args.device
        if args.sampler is not None:
            model.config.sampler = args.sampler
    else:
        model = BayesAligner(_config(args))
    method = args.decoding or decoding.get("method", "viterbi")
    threshold = args.threshold if args.threshold is not None else decoding.get("threshold",
                                                                              0.5)
    heuristic = args.symmetrize or decoding.get("symmetrize", "grow-diag-final-and")
    if heuristic not in HEURISTICS:
        raise AlignersInputError(f"--symmetrize {heuristic!r}: choose one of "
                                 f"{', '.join(HEURISTICS)}")
    marg = model.align(pairs, seed=args.seed)
    th = threshold if method == "posterior" else None
    outs = []  # lines stream per sentence from the sparse marginals (no per-link objects)
    if args.forward_links:
        outs.append((args.forward_links, None, "fwd"))
    if args.reverse_links:
        outs.append((args.reverse_links, None, "rev"))
    if args.output is not None or args.symmetrize is not None or not outs:
        outs.append((args.output or "-", heuristic, "fwd"))
    for dest, heur, direction in outs:
        write(dest, link_lines(marg, heuristic=heur, direction=direction, threshold=th,
                               posteriors=bool(args.posteriors)))
    schedule, n_pairs = marg.schedule, marg.corpus.n_sentences
    del marg  # free the marginals before saving (which imports torch)
    if args.save_model:
        try:
            save_bayes_aligner(args.save_model, model, decoding={
                "method": method, "threshold": threshold, "symmetrize": heuristic})
        except OSError as err:
            raise AlignersInputError(f"--save-model: cannot write the model: {err.strerror}",
                                     path=args.save_model) from None
    if not args.quiet and sys.stderr.isatty():
        print(f"bayesian: {n_pairs} pairs, sweeps per stage {schedule}",
              file=sys.stderr)
    return 0
