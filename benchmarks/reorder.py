"""Side-by-side timings for the reordering models (medians of repeats, same process).

    python benchmarks/reorder.py --pairs 20000 --repeats 3

Primal SGD vs dual EG (eps = 0.1): training time ratio; lexicalized table vs naive Bayes:
prediction throughput and size on disk. Runs are interleaved (primal, dual, primal, ...)
so that machine noise hits both alike. Prints one JSON object.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.data.paths import data_root  # noqa: E402
from aligners.features.reorder import (  # noqa: E402
    ReorderFeaturizer,
    collect_examples,
    csr_to_torch,
    fit_feature_vocab,
    to_csr,
)
from aligners.models.reorder import DualMLR, LexicalReordering, NaiveBayes, PrimalMLR  # noqa: E402
from aligners.models.reorder._common import error_rate  # noqa: E402
from aligners.models.reorder.dual_mlr import warmup as dual_warmup  # noqa: E402
from aligners.models.reorder.mlr import warmup as mlr_warmup  # noqa: E402
from aligners.phrases import load_corpus  # noqa: E402
from aligners.training.reorder import dir_size  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--sigma2", type=float, default=0.01)
    ap.add_argument("--eps", type=float, default=0.1)
    args = ap.parse_args()
    torch.set_num_threads(2)
    d = data_root() / "hansards-enfr-naacl2003"
    corpus = load_corpus(str(d / "train/hansards.train200k.e.gz"),
                         str(d / "train/hansards.train200k.f.gz"),
                         str(d / "aligned/eflomal.train200k.gdfa.gz"), limit=args.pairs)
    start = time.perf_counter()
    feat = ReorderFeaturizer()
    raw = collect_examples(corpus, feat)
    extract_s = time.perf_counter() - start
    rows = np.arange(len(raw))
    cut = int(round(0.9 * raw.n_sentences))
    tr, te = rows[raw.sentence < cut], rows[raw.sentence >= cut]
    vocab = fit_feature_vocab(raw, tr)
    Xtr, Xte = csr_to_torch(to_csr(raw, tr, vocab)), csr_to_torch(to_csr(raw, te, vocab))
    ytr, yte = raw.labels[tr], raw.labels[te]
    F = len(vocab)
    mlr_warmup()
    dual_warmup()
    times = {"primal": [], "dual": []}
    errors = {}
    for r in range(args.repeats):
        for name in (("primal", "dual") if r % 2 == 0 else ("dual", "primal")):
            gen = torch.Generator().manual_seed(r)
            t0 = time.perf_counter()
            if name == "primal":
                m = PrimalMLR(num_features=F, sigma2=args.sigma2).fit(
                    Xtr, ytr, epochs=args.epochs, lr=0.05, generator=gen)
            else:
                m = DualMLR(num_features=F, sigma2=args.sigma2).fit(
                    Xtr, ytr, eps=args.eps, max_iter=30, step=1.0, generator=gen)
            times[name].append(time.perf_counter() - t0)
            errors.setdefault(name, []).append(error_rate(m.predict_log_proba(Xte), yte))
    lex = LexicalReordering().fit(raw.keys[tr], ytr)
    nb = NaiveBayes(num_features=F).fit(Xtr, ytr)
    pred = {"lexical": [], "nb_map": []}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        lex.predict_log_proba(raw.keys[te])
        pred["lexical"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        nb.predict_log_proba(Xte)
        pred["nb_map"].append(time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as tmp:
        lex.save(Path(tmp) / "lex")
        nb.save(Path(tmp) / "nb", features=feat.describe(vocab))
        sizes = {"lexical": dir_size(Path(tmp) / "lex"), "nb_map": dir_size(Path(tmp) / "nb")}
    med = {k: float(np.median(v)) for k, v in times.items()}
    out = {
        "pairs": args.pairs, "train_examples": int(len(tr)), "features": F,
        "extract_and_encode_seconds": extract_s,
        "train_seconds_median": med, "train_seconds_all": times,
        "dual_over_primal_time": med["dual"] / med["primal"],
        "heldout_error": {k: float(np.mean(v)) for k, v in errors.items()},
        "predict_seconds_median": {k: float(np.median(v)) for k, v in pred.items()},
        "model_bytes (safetensors + json)": sizes,
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
