"""`aligners reorder extract|train|predict`: phrase pairs with orientations, reordering models.

    aligners reorder extract -s SRC -t TGT -a ALIGN [--max-length 7] [--orientation wbe] -o OUT
    aligners reorder train -s SRC -t TGT -a ALIGN --model nb|lexical|primal|dual -o MODEL_DIR
    aligners reorder predict -m MODEL_DIR -s SRC -t TGT -a ALIGN [-o OUT]

ALIGN is Pharaoh `i-j` (0-based, source-target); gzip inputs/outputs are fine (`.gz`).
`extract` writes one line per phrase-pair occurrence, `src ||| tgt ||| alignment ||| orient`
(Moses `extract` order and classes). Models export as safetensors + JSON (no pickle).
"""

import argparse
import gzip
import json
import sys
import warnings
from pathlib import Path

from aligners.errors import AlignersInputError

__all__ = ["add_arguments", "run"]


def _corpus_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--src", required=True, help="source side, one sentence per line")
    p.add_argument("-t", "--tgt", required=True, help="target side")
    p.add_argument("-a", "--align", required=True, help="Pharaoh i-j alignment (source-target)")
    p.add_argument("--limit", type=int, default=None, help="first N sentence pairs only")
    p.add_argument("--lowercase", action="store_true", help="lowercase both sides (predict: "
                   "always as the model was trained)")
    p.add_argument("--lenient", action="store_true",
                   help="drop (count, warn about) links outside their sentence instead of failing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _extract_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-length", type=int, default=7, help="max phrase length (Moses: 7)")
    p.add_argument("--orientation", choices=["wbe", "phrase", "hier"], default="wbe",
                   help="word-based (msd), phrase-based or hierarchical orientation")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ex = sub.add_parser("extract", help="phrase pairs with orientations, Moses extract format")
    _corpus_args(ex)
    _extract_args(ex)
    ex.add_argument("--direction", choices=["backward", "forward", "both"], default="backward",
                    help="orientation w.r.t. the previous (backward) or next (forward) target "
                    "phrase; both: two columns, as Moses' bidirectional extract.o")
    ex.add_argument("-o", "--output", default="-", help="output file (.gz ok), - for stdout")

    tr = sub.add_parser("train", help="train a reordering model on every pair given")
    _corpus_args(tr)
    _extract_args(tr)
    tr.add_argument("--direction", choices=["backward", "forward"], default="backward",
                    help="which orientation to model (w.r.t. previous/next target phrase)")
    tr.add_argument("--model", choices=["lexical", "nb", "primal", "dual"], default="nb",
                    help="lexical table, naive Bayes, primal or dual MaxEnt (default: nb)")
    tr.add_argument("--min-count", type=int, default=10, help="drop rarer features")
    tr.add_argument("--inference", choices=["map", "bayes"], default="map", help="naive Bayes")
    tr.add_argument("--alpha", type=float, default=2.0, help="naive Bayes Dirichlet parameter")
    tr.add_argument("--mi-remove", type=float, default=0.0,
                    help="naive Bayes: fraction of lowest-MI features removed")
    tr.add_argument("--sigma2", type=float, default=0.01, help="MaxEnt penalty (Eq. 6)")
    tr.add_argument("--epochs", type=int, default=10, help="primal SGD epochs")
    tr.add_argument("--lr", type=float, default=0.05, help="primal SGD step")
    tr.add_argument("--eps", type=float, default=0.1, help="dual shrinking tolerance")
    tr.add_argument("--max-iter", type=int, default=30, help="dual EG iterations")
    tr.add_argument("--seed", type=int, default=1234, help="torch.Generator seed (SGD/EG order)")
    tr.add_argument("--moses-table", default=None,
                    help="lexical: also write the Moses reordering table here")
    tr.add_argument("-o", "--output", required=True, help="model folder")

    pr = sub.add_parser("predict", help="orientation probabilities of each phrase pair")
    _corpus_args(pr)
    pr.add_argument("-m", "--model", required=True, help="folder written by `train`")
    pr.add_argument("-o", "--output", default="-", help="output file (.gz ok), - for stdout")


def _open_out(path: str, inputs: tuple[str, ...] = ()):
    if path == "-":
        return sys.stdout
    if any(x != "-" and Path(x).resolve() == Path(path).resolve() for x in inputs):
        raise AlignersInputError("is also an input file; expected a different output path "
                                 "(writing would truncate the input)", path=path)
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return gzip.open(path, "wt", encoding="utf-8") if path.endswith(".gz") else open(
            path, "w", encoding="utf-8")
    except OSError as err:
        raise AlignersInputError(f"cannot write: {err.strerror or err}; expected a writable "
                                 "output path", path=path) from None


def _corpus(args):
    from tqdm import tqdm

    from aligners.phrases import load_corpus

    paths = [getattr(args, name) for name in ("src", "tgt", "align")]
    if paths.count("-") > 1:
        raise AlignersInputError("only one of -s / -t / -a can be '-' (stdin)")
    if args.limit is not None and args.limit < 0:
        raise AlignersInputError(f"--limit must be >= 0, got {args.limit}")
    for path in paths:
        if path != "-" and not Path(path).is_file():
            raise AlignersInputError("no such file", path=path)
    it = load_corpus(args.src, args.tgt, args.align, limit=args.limit, lowercase=args.lowercase,
                     lenient=args.lenient)
    return tqdm(it, desc=args.action, unit="pair", mininterval=2, disable=args.no_progress,
                file=sys.stderr)


def run(args) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = {"extract": _extract, "train": _train, "predict": _predict}[args.action](args)
    for w in caught:  # e.g. out-of-range links dropped under --lenient, with their count
        print(f"aligners reorder {args.action}: warning: {w.message}", file=sys.stderr)
    return status


def _extract(args) -> int:
    from aligners.phrases import format_extract_line, iter_extract

    out = _open_out(args.output, (args.src, args.tgt, args.align))
    n = 0
    try:
        for _, src, tgt, links, pairs in iter_extract(
            _corpus(args), max_length=args.max_length, mode=args.orientation
        ):
            for p in pairs:
                out.write(format_extract_line(src, tgt, p, links, direction=args.direction))
                out.write("\n")
                n += 1
    finally:
        if out is not sys.stdout:
            out.close()
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
        to_csr,
    )
    from aligners.models.reorder import (
        DualMLR,
        LexicalReordering,
        NaiveBayes,
        PrimalMLR,
        mutual_information,
    )

    if args.moses_table and "-" in (args.src, args.tgt, args.align):
        raise AlignersInputError("--moses-table reads the corpus twice: give files, not '-'")
    try:
        Path(args.output).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AlignersInputError(f"cannot create the model folder: {err.strerror or err}",
                                 path=args.output) from None
    torch.set_num_threads(2)
    feat = ReorderFeaturizer()
    raw = collect_examples(_corpus(args), feat, max_length=args.max_length,
                           mode=args.orientation, direction=args.direction)
    if len(raw) == 0:
        raise AlignersInputError("no phrase pairs extracted (empty corpus or no links)")
    out = Path(args.output)
    extract = {"max_length": args.max_length, "orientation": args.orientation,
               "direction": args.direction, "lowercase": args.lowercase}
    if args.model == "lexical":
        lex = LexicalReordering().fit(raw.keys, raw.labels)
        lex.save(out)
        if args.moses_table:
            from aligners.features.reorder import iter_phrase_strings

            lex.write_moses_table(args.moses_table, iter_phrase_strings(
                _corpus(args), max_length=args.max_length, mode=args.orientation))
        _add_config(out, {"extract": extract})
        print(f"aligners reorder train: lexical table of {len(lex.keys)} pairs -> {out}",
              file=sys.stderr)
        return 0
    rows = np.arange(len(raw))
    vocab = fit_feature_vocab(raw, rows, min_count=args.min_count)
    X = csr_to_torch(to_csr(raw, rows, vocab))
    y = raw.labels
    F = len(vocab)
    gen = torch.Generator().manual_seed(args.seed)
    if args.model == "nb":
        keep = np.arange(F)
        if args.mi_remove > 0:
            order = np.argsort(mutual_information(X, y, num_classes=3).numpy(), kind="stable")
            keep = np.sort(order[int(round(args.mi_remove * F)):])
        model = NaiveBayes(num_features=F, alpha=args.alpha, inference=args.inference).fit(X, y)
        model = model.select(keep)
        vocab = vocab[keep]
    elif args.model == "primal":
        model = PrimalMLR(num_features=F, sigma2=args.sigma2).fit(
            X, y, epochs=args.epochs, lr=args.lr, generator=gen)
    else:
        model = DualMLR(num_features=F, sigma2=args.sigma2).fit(
            X, y, eps=args.eps, max_iter=args.max_iter, step=1.0, generator=gen)
    model.save(out)
    (out / "features.json").write_text(json.dumps(feat.describe(vocab)))
    _add_config(out, {"extract": extract, "features": {"min_count": args.min_count}})
    print(f"aligners reorder train: {args.model} on {len(y)} phrase pairs, {len(vocab)} "
          f"features -> {out}", file=sys.stderr)
    return 0


def _add_config(out: Path, extra: dict) -> None:
    cfg = json.loads((out / "config.json").read_text())
    cfg.update(extra)
    (out / "config.json").write_text(json.dumps(cfg, indent=1))


def _load(model_dir: Path):
    from aligners.models.reorder import DualMLR, LexicalReordering, NaiveBayes, PrimalMLR

    cfg_path = model_dir / "config.json"
    if not cfg_path.is_file():
        raise AlignersInputError(f"{model_dir}: no config.json (train a model first)")
    cfg = _read_json(cfg_path)
    classes = {"lexical": LexicalReordering, "naive_bayes": NaiveBayes,
               "primal_mlr": PrimalMLR, "dual_mlr": DualMLR}
    if cfg.get("kind") not in classes:
        raise AlignersInputError(f"{cfg_path}: unknown model kind {cfg.get('kind')!r}")
    return classes[cfg["kind"]].load(model_dir), cfg


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AlignersInputError("missing; expected the file written by `aligners reorder "
                                 "train`", path=str(path)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AlignersInputError(f"unreadable model file ({err}); expected the JSON written "
                                 "by `aligners reorder train`", path=str(path)) from None


def _chunks(it, size: int):
    chunk = []
    for item in it:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _predict(args) -> int:
    import numpy as np
    import torch

    from aligners.features.reorder import (
        ReorderFeaturizer,
        collect_examples,
        csr_to_torch,
        to_csr,
    )
    from aligners.phrases import ORIENTATIONS, iter_extract

    model_dir = Path(args.model)
    model, cfg = _load(model_dir)
    ex = cfg.get("extract", {})
    max_length, mode = ex.get("max_length", 7), ex.get("orientation", "wbe")
    direction = ex.get("direction", "backward")
    if "lowercase" in ex:  # featurise as in training (the keys/features are case-exact)
        if args.lowercase and not ex["lowercase"]:
            raise AlignersInputError(f"{model_dir} was trained on cased text; drop --lowercase")
        args.lowercase = bool(ex["lowercase"])
    if cfg["kind"] != "lexical":
        described = _read_json(model_dir / "features.json")
        feat, codes = ReorderFeaturizer.from_described(described)
        order = np.argsort(codes, kind="stable")
        back = np.argsort(order)  # sorted-code column -> the model's column
    out = _open_out(args.output, (args.src, args.tgt, args.align))
    n = wrong = 0
    try:  # streams the corpus in chunks of sentence pairs: memory O(chunk)
        for triples in _chunks(_corpus(args), 5000):
            if cfg["kind"] == "lexical":
                raw = collect_examples(triples, ReorderFeaturizer(), max_length=max_length,
                                       mode=mode, direction=direction)
                log_p = model.predict_log_proba(raw.keys)
            else:
                raw = collect_examples(triples, feat, max_length=max_length, mode=mode,
                                       direction=direction, grow=False)
                X = to_csr(raw, np.arange(len(raw)), codes[order])[:, back].tocsr()
                log_p = model.predict_log_proba(csr_to_torch(X))
            probs = torch.exp(log_p).numpy()
            pred = probs.argmax(axis=1)
            wrong += int((pred != raw.labels).sum())
            e = 0
            for _, src, tgt, _, pairs in iter_extract(triples, max_length=max_length,
                                                      mode=mode):
                for p in pairs:
                    out.write(f"{' '.join(src[p.src_start:p.src_end])} ||| "
                              f"{' '.join(tgt[p.tgt_start:p.tgt_end])} ||| "
                              f"{ORIENTATIONS[pred[e]]} ||| "
                              + " ".join(f"{v:.4f}" for v in probs[e]) + "\n")
                    e += 1
            n += e
    finally:
        if out is not sys.stdout:
            out.close()
    err = f"{100.0 * wrong / n:.2f}%" if n else "n/a"
    print(f"aligners reorder predict: {n} phrase pairs, error vs extracted {direction} "
          f"orientation {err}", file=sys.stderr)
    return 0
