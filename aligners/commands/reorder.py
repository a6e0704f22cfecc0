"""`aligners reorder extract|train|predict`: phrase pairs with orientations, reordering models.

    aligners reorder extract -s SRC -t TGT -a ALIGN [--max-length 7] [--orientation wbe] -o OUT
    aligners reorder train -s SRC -t TGT -a ALIGN --model nb|lexical|primal|dual -o MODEL_DIR
    aligners reorder predict -m MODEL_DIR -s SRC -t TGT -a ALIGN [-o OUT]

ALIGN is Pharaoh `i-j` (0-based, source-target); gzip inputs/outputs are fine (`.gz`).
`extract` writes one line per phrase-pair occurrence, `src ||| tgt ||| alignment ||| orient`
(Moses `extract` order and classes). Models export through `aligners/export.py`
(safetensors + config.json, no pickle; written atomically, so a failed `train` leaves no
folder; `-o` must be a new path, an empty folder or a model folder, `aligners.outputs`);
`extract`/`predict`/`--moses-table` outputs follow `aligners.outputs` (never an input,
atomic for files, written through to devices). Every option and path is checked before any
work (`aligners.config_checks`, `aligners.outputs`).
"""

import argparse
import sys
import warnings
from pathlib import Path

from aligners.errors import AlignersInputError
from aligners.models.reorder.config import (
    DualConfig,
    ExtractConfig,
    FeatureConfig,
    NaiveBayesConfig,
    PrimalConfig,
    ReorderData,
)

__all__ = ["add_arguments", "run"]


def _corpus_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--src", required=True, help="source side, one sentence per line")
    p.add_argument("-t", "--tgt", required=True, help="target side")
    p.add_argument("-a", "--align", required=True, help="Pharaoh i-j alignment (source-target)")
    p.add_argument("--limit", type=int, default=ReorderData.train_limit,
                   help="first N >= 1 sentence pairs only (default: all)")
    p.add_argument("--lowercase", action="store_true", help="lowercase both sides (predict: "
                   "always as the model was trained)")
    p.add_argument("--lenient", action="store_true",
                   help="drop (count, warn about) links outside their sentence instead of failing")
    p.add_argument("-q", "--quiet", "--no-progress", dest="no_progress", action="store_true",
                   help="no progress bar on stderr (--quiet, as in `aligners align`)")


def _extract_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-length", type=int, default=ExtractConfig.max_length,
                   help="max phrase length (Moses: 7)")
    p.add_argument("--orientation", choices=["wbe", "phrase", "hier"],
                   default=ExtractConfig.mode,
                   help="word-based (msd), phrase-based or hierarchical orientation")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ex = sub.add_parser("extract", help="phrase pairs with orientations, Moses extract format",
                        description="Extract every phrase pair consistent with the word "
                        "alignment, with its orientation, in Moses `extract` format.")
    _corpus_args(ex)
    _extract_args(ex)
    ex.add_argument("--direction", choices=["backward", "forward", "both"],
                    default=ExtractConfig.direction,
                    help="orientation w.r.t. the previous (backward) or next (forward) target "
                    "phrase; both: two columns, as Moses' bidirectional extract.o")
    ex.add_argument("-o", "--output", default="-", help="output file (.gz ok), - for stdout")

    tr = sub.add_parser("train", help="train a reordering model on every pair given",
                        description="Train a reordering model (naive Bayes, lexical table, "
                        "primal or dual MaxEnt) on every phrase pair of the bitext; writes a "
                        "model folder that `predict` and `aligners.load` read.")
    _corpus_args(tr)
    _extract_args(tr)
    tr.add_argument("--direction", choices=["backward", "forward"],
                    default=ExtractConfig.direction,
                    help="which orientation to model (w.r.t. previous/next target phrase)")
    tr.add_argument("--model", choices=["lexical", "nb", "primal", "dual"], default="nb",
                    help="lexical table, naive Bayes, primal or dual MaxEnt")
    tr.add_argument("--min-count", type=int, default=FeatureConfig.min_count,
                    help="drop rarer features")
    tr.add_argument("--inference", choices=["map", "bayes"],
                    default=NaiveBayesConfig.inference, help="naive Bayes")
    tr.add_argument("--alpha", type=float, default=NaiveBayesConfig.alpha,
                    help="naive Bayes Dirichlet parameter")
    tr.add_argument("--mi-remove", type=float, default=0.0,
                    help="naive Bayes: fraction of lowest-MI features removed")
    tr.add_argument("--sigma2", type=float, default=PrimalConfig.sigma2,
                    help="MaxEnt penalty (Eq. 6)")
    tr.add_argument("--epochs", type=int, default=PrimalConfig.epochs, help="primal SGD epochs")
    tr.add_argument("--lr", type=float, default=PrimalConfig.lr, help="primal SGD step")
    tr.add_argument("--eps", type=float, default=DualConfig.eps,
                    help="dual shrinking tolerance")
    tr.add_argument("--max-iter", type=int, default=DualConfig.max_iter,
                    help="dual EG iterations (at most)")
    tr.add_argument("--seed", type=int, default=1234, help="torch.Generator seed (SGD/EG order)")
    tr.add_argument("--moses-table", default=None,
                    help="lexical: also write the Moses reordering table here")
    tr.add_argument("-o", "--output", required=True, help="model folder")
    tr.add_argument("--overwrite", action="store_true",
                    help="-o may replace a model folder of another family")

    pr = sub.add_parser("predict", help="orientation probabilities of each phrase pair",
                        description="Orientation probabilities of every phrase pair of the "
                        "bitext under a model folder written by `train` (or the reorder task).")
    _corpus_args(pr)
    pr.add_argument("-m", "--model", required=True, help="folder written by `train`")
    pr.add_argument("-o", "--output", default="-", help="output file (.gz ok), - for stdout")


def _corpus(args):
    from tqdm import tqdm

    from aligners.phrases import load_corpus

    paths = [getattr(args, name) for name in ("src", "tgt", "align")]
    if paths.count("-") > 1:
        raise AlignersInputError("only one of -s / -t / -a can be '-' (stdin)")
    for path in paths:
        if path != "-" and not Path(path).is_file():
            raise AlignersInputError("no such file", path=path)
    it = load_corpus(args.src, args.tgt, args.align, limit=args.limit, lowercase=args.lowercase,
                     lenient=args.lenient)
    show = not args.no_progress and sys.stderr.isatty()  # not a terminal: the summary lines
    return tqdm(it, desc=args.action, unit="pair", mininterval=2, disable=not show,
                file=sys.stderr)


def _check(args) -> None:
    """Every numeric option and every path, checked once before any work (one line on
    error): outputs never overwrite an input (`aligners.outputs`)."""
    from aligners.config_checks import Rule, check_options, rules_of
    from aligners.outputs import check_model_dir, check_paths

    inputs = {"-s": args.src, "-t": args.tgt, "-a": args.align}
    if args.action == "train":
        check_paths(inputs, {"--moses-table": args.moses_table})
        from aligners.families import family

        check_model_dir(args.output, "-o", others={**inputs, "--moses-table": args.moses_table},
                        kinds=family("reorder").all_kinds, overwrite=args.overwrite)
    else:
        check_paths({**inputs, "-m": getattr(args, "model", None)}, {"-o": args.output})

    data, ext = rules_of(ReorderData), rules_of(ExtractConfig)
    rules = {"limit": data["train_limit"], "max_length": ext["max_length"]}
    if args.action == "train":
        primal, dual, nb = rules_of(PrimalConfig), rules_of(DualConfig), rules_of(NaiveBayesConfig)
        rules.update({
            "min_count": rules_of(FeatureConfig)["min_count"], "alpha": nb["alpha"],
            "mi_remove": Rule("float", lo=0, hi=1, hi_open=True),
            "sigma2": primal["sigma2"], "epochs": primal["epochs"], "lr": primal["lr"],
            "eps": dual["eps"], "max_iter": dual["max_iter"]})
        if args.model == "nb" and args.inference == "map" and args.alpha <= 1:
            raise AlignersInputError(f"--alpha must be > 1 for --inference map (Eq. 10); "
                                     f"got {args.alpha}")
    check_options(args, rules)


def run(args) -> int:
    _check(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = {"extract": _extract, "train": _train, "predict": _predict}[args.action](args)
    for w in caught:  # e.g. out-of-range links dropped under --lenient, with their count
        print(f"aligners reorder {args.action}: warning: {w.message}", file=sys.stderr)
    return status


def _extract(args) -> int:
    from aligners.outputs import open_output
    from aligners.phrases import format_extract_line, iter_extract

    n = 0
    with open_output(args.output, flag="-o") as out:
        for _, src, tgt, links, pairs in iter_extract(
            _corpus(args), max_length=args.max_length, mode=args.orientation
        ):
            for p in pairs:
                out.write(format_extract_line(src, tgt, p, links, direction=args.direction)
                          + "\n")
                n += 1
    print(f"aligners reorder extract: {n} phrase pairs", file=sys.stderr)
    return 0


def _train(args) -> int:
    import numpy as np
    import torch

    from aligners.features.reorder import (
        ReorderFeaturizer,
        collect_examples,
        csr_to_torch,
        fit_feature_vocab,
        iter_phrase_strings,
        to_csr,
    )
    from aligners.models.reorder import folder, mutual_information
    from aligners.models.reorder._common import fit
    from aligners.models.reorder.naive_bayes import mi_kept
    from aligners.outputs import open_output

    if args.moses_table and "-" in (args.src, args.tgt, args.align):
        raise AlignersInputError("--moses-table reads the corpus twice: give files, not '-'")
    out = Path(args.output)  # checked by `_check` (aligners.outputs.check_model_dir)
    torch.set_num_threads(1)  # more oversubscribes a busy machine (issue 36 item 7)
    feat = ReorderFeaturizer()
    raw = collect_examples(_corpus(args), feat, max_length=args.max_length,
                           mode=args.orientation, direction=args.direction)
    if len(raw) == 0:
        raise AlignersInputError("no phrase pairs extracted (empty corpus or no links)")
    extract = dict(max_length=args.max_length, orientation=args.orientation,
                   direction=args.direction, lowercase=args.lowercase)
    name = {"nb": "naive_bayes"}.get(args.model, args.model)
    hp = {"alpha": args.alpha, "inference": args.inference, "sigma2": args.sigma2,
          "lr": args.lr, "eps": args.eps}
    gen = torch.Generator().manual_seed(args.seed)
    epochs = {"primal": args.epochs, "dual": args.max_iter}.get(name, 1)
    if name == "lexical":
        model = fit(folder.build(name, **hp), raw.keys, raw.labels, epochs=1, generator=gen)
        if args.moses_table:  # Moses' reordering-table format (a second pass over the corpus)
            with open_output(args.moses_table, flag="--moses-table") as table:
                model.write_moses_table(table, iter_phrase_strings(
                    _corpus(args), max_length=args.max_length, mode=args.orientation))
        meta, features = folder.meta(**extract), None
        summary = f"lexical table of {len(model.keys)} pairs"
    else:
        rows = np.arange(len(raw))
        vocab = fit_feature_vocab(raw, rows, min_count=args.min_count)
        X, y = csr_to_torch(to_csr(raw, rows, vocab)), raw.labels
        model = fit(folder.build(name, num_features=len(vocab), **hp), X, y, epochs=epochs,
                    generator=gen, **hp)
        if name == "naive_bayes" and args.mi_remove > 0:  # the lowest-MI features removed
            keep = mi_kept(mutual_information(X, y, num_classes=3).numpy(), args.mi_remove)
            model, vocab = model.select(keep), vocab[keep]
        meta, features = folder.meta(**extract, min_count=args.min_count), feat.describe(vocab)
        summary = f"{args.model} on {len(y)} phrase pairs, {len(vocab)} features"
    model.save(out, meta=meta, features=features)  # atomic: no partial or empty folder
    print(f"aligners reorder train: {summary} -> {out}", file=sys.stderr)
    return 0


def _predict(args) -> int:
    import itertools

    import torch

    from aligners.export import load
    from aligners.features.reorder import iter_phrase_strings
    from aligners.phrases import ORIENTATIONS

    model_dir = Path(args.model)
    reorderer = load(model_dir, verb="reorder")  # AlignersInputError: missing/corrupt/not ours
    # featurise as in training (the keys/features are case-exact)
    if args.lowercase and not reorderer.lowercase:
        raise AlignersInputError(f"{model_dir} was trained on cased text; drop --lowercase")
    args.lowercase = reorderer.lowercase
    from aligners.outputs import open_output

    n = wrong = 0
    with open_output(args.output, flag="-o") as out:
        corpus = iter(_corpus(args))  # streamed in chunks of sentence pairs: memory O(chunk)
        while triples := list(itertools.islice(corpus, 5000)):
            log_p, labels = reorderer.predict_corpus(triples)
            probs = torch.exp(log_p).numpy()
            pred = probs.argmax(axis=1)
            wrong += int((pred != labels).sum())
            phrases = iter_phrase_strings(triples, max_length=reorderer.max_length,
                                          mode=reorderer.mode)  # predict_corpus's pairs
            for e, (src, tgt, _) in enumerate(phrases):
                out.write(f"{src} ||| {tgt} ||| {ORIENTATIONS[pred[e]]} ||| "
                          + " ".join(f"{v:.4f}" for v in probs[e]) + "\n")
            n += len(labels)
    err = f"{100.0 * wrong / n:.2f}%" if n else "n/a"
    print(f"aligners reorder predict: {n} phrase pairs, error vs extracted {reorderer.direction} "
          f"orientation {err}", file=sys.stderr)
    return 0
