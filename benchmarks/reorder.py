"""Phrase reordering (Alrajeh & Niranjan 2014): the dual MaxEnt model against the primal one
(time, held-out error), with the lexicalized and naive-Bayes models; rows ->
benchmarks/results/reorder.json.

    python benchmarks/reorder.py --pairs 20000 --repeats 3          # primal vs dual, interleaved
    python benchmarks/reorder.py --experiment reorder_200k           # a whole experiment
    python benchmarks/reorder.py --pairs 500 --repeats 1 --no-save   # a smoke run

Side-by-side mode (--pairs N): the first N Hansards pairs with their eflomal gdfa links, Moses
`wbe-msd-backward` phrase pairs, the last 10% of the sentence pairs held out (as the
experiments); primal (SGD, --epochs) and dual (exponentiated gradient, --eps) trained in
turn in one process, --repeats times (harness.measure_interleaved: median train seconds),
then the lexicalized table and naive Bayes (MAP) once: held-out error, size of the saved
model folder. Experiment mode: `python train.py experiment=NAME` as a child under the harness
(wall, CPU, peak RSS of the whole task), rows from its results.json (every model's train
seconds, held-out error, size) and the majority class.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    ROOT,
    add_output_args,
    machine,
    make_row,
    measure_interleaved,
    run_command,
    write_rows,
)

sys.path.insert(0, str(ROOT))

__all__ = ["main", "rows_from_results"]

_NAMES = {"lexical": "lexicalized (Moses)", "nb_map": "naive Bayes MAP",
          "nb_bayes": "naive Bayes (Bayesian)", "primal": "primal MLR"}


def _dataset(pairs: int) -> str:
    return f"hansards-{pairs // 1000}k" if pairs % 1000 == 0 else f"hansards-{pairs}"


def _error_rate(log_proba, labels) -> float:
    """Held-out error. Private: aligners.models.reorder._common.error_rate has no public
    name yet (see the report of the benchmark-suite work); imported here only."""
    from aligners.models.reorder._common import error_rate

    return error_rate(log_proba, labels)


def rows_from_results(results: dict, dataset: str, desc: str) -> list[dict]:
    """Rows of an experiment's results.json (errors in %, sizes in MB)."""
    rows = [make_row("reorder", dataset, "majority class", machine_desc=desc, metrics={
        "error": round(100 * results["data"]["majority_error"], 2)})]
    models = results.get("models", {})
    primal = models.get("primal", {}).get("train_seconds")
    for name, rec in models.items():
        system = _NAMES.get(name) or name.replace("dual_eps", "dual MLR eps ")
        m = {"error": round(100 * rec["heldout_error"], 2)}
        if rec.get("size_bytes"):
            m["size_mb"] = round(rec["size_bytes"] / 1e6, 2)
        if name.startswith("dual") and primal:
            m["dual_vs_primal"] = round(rec["train_seconds"] / primal, 2)
        rows.append(make_row("reorder", dataset, system, metrics=m,
                             wall_s=rec["train_seconds"], machine_desc=desc,
                             note="train seconds of the model alone; one run"))
    half = [r for r in results.get("mi_curve", []) if r["fraction_removed"] == 0.5]
    if half and "error_map" in half[0]:  # the naive-Bayes MI curve at half the features
        rows.append(make_row("reorder", dataset, "naive Bayes MAP, half the features",
                             machine_desc=desc, note="50% lowest-MI features removed",
                             metrics={"error": round(100 * half[0]["error_map"], 2),
                                      "size_mb": round(half[0]["size_bytes"] / 1e6, 2)}))
    return rows


def side_by_side(args) -> list[dict]:
    import numpy as np
    import torch

    from aligners.data.paths import data_root
    from aligners.features.reorder import (
        ReorderFeaturizer,
        collect_examples,
        csr_to_torch,
        fit_feature_vocab,
        to_csr,
    )
    from aligners.models.reorder import DualMLR, LexicalReordering, NaiveBayes, PrimalMLR
    from aligners.models.reorder.dual_mlr import warmup as dual_warmup
    from aligners.models.reorder.mlr import warmup as mlr_warmup
    from aligners.phrases import load_corpus
    from aligners.training.reorder import dir_size

    torch.set_num_threads(args.threads)
    d = data_root() / "hansards-enfr-naacl2003"
    corpus = load_corpus(str(d / "train/hansards.train200k.e.gz"),
                         str(d / "train/hansards.train200k.f.gz"),
                         str(d / "aligned/eflomal.train200k.gdfa.gz"), limit=args.pairs)
    feat = ReorderFeaturizer()
    raw = collect_examples(corpus, feat)
    rows = np.arange(len(raw))
    cut = int(round(0.9 * raw.n_sentences))
    tr, te = rows[raw.sentence < cut], rows[raw.sentence >= cut]
    vocab = fit_feature_vocab(raw, tr)
    Xtr, Xte = csr_to_torch(to_csr(raw, tr, vocab)), csr_to_torch(to_csr(raw, te, vocab))
    ytr, yte = raw.labels[tr], raw.labels[te]
    F = len(vocab)
    mlr_warmup()  # numba compilation outside the timed fits
    dual_warmup()
    fitted = {}

    def primal():
        fitted["primal"] = PrimalMLR(num_features=F, sigma2=args.sigma2).fit(
            Xtr, ytr, epochs=args.epochs, lr=0.05, generator=torch.Generator().manual_seed(0))

    def dual():
        fitted["dual"] = DualMLR(num_features=F, sigma2=args.sigma2).fit(
            Xtr, ytr, eps=args.eps, max_iter=30, step=1.0,
            generator=torch.Generator().manual_seed(0))

    t = measure_interleaved({"primal": primal, "dual": dual}, repeats=args.repeats, warmup=0)
    lex = LexicalReordering().fit(raw.keys[tr], ytr)
    nb = NaiveBayes(num_features=F).fit(Xtr, ytr)
    with tempfile.TemporaryDirectory() as tmp:
        lex.save(Path(tmp) / "lex")
        nb.save(Path(tmp) / "nb", features=feat.describe(vocab))
        size = {"lex": dir_size(Path(tmp) / "lex"), "nb": dir_size(Path(tmp) / "nb")}
    majority = np.bincount(ytr, minlength=3).argmax()
    ds, desc = _dataset(args.pairs), machine() + f", {args.threads} torch thread(s)"
    note = (f"{len(tr)} training / {len(te)} held-out phrase pairs, {F} features; median of "
            f"{args.repeats} interleaved fits")

    def err(model, x):
        return round(100 * _error_rate(model.predict_log_proba(x), yte), 2)

    return [
        make_row("reorder", ds, "majority class", machine_desc=desc,
                 metrics={"error": round(100 * float(np.mean(yte != majority)), 2)}),
        make_row("reorder", ds, "lexicalized (Moses)", machine_desc=desc,
                 metrics={"error": err(lex, raw.keys[te]), "size_mb": round(size["lex"] / 1e6, 2)},
                 note="size = our safetensors table (no Moses text table in this mode)"),
        make_row("reorder", ds, "naive Bayes MAP", machine_desc=desc,
                 metrics={"error": err(nb, Xte), "size_mb": round(size["nb"] / 1e6, 2)}),
        make_row("reorder", ds, "primal MLR", metrics={"error": err(fitted["primal"], Xte)},
                 wall_s=t["primal"]["wall_s"], cpu_s=t["primal"]["cpu_s"], machine_desc=desc,
                 note=f"SGD, {args.epochs} epochs; {note}"),
        make_row("reorder", ds, f"dual MLR eps {args.eps:g}", metrics={
            "error": err(fitted["dual"], Xte),
            "dual_vs_primal": round(t["dual"]["wall_s"] / t["primal"]["wall_s"], 2)},
            wall_s=t["dual"]["wall_s"], cpu_s=t["dual"]["cpu_s"], machine_desc=desc,
            headline=args.pairs == 200_000, note=f"exponentiated gradient; {note}"),
    ]


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", choices=["reorder_emnlp_table2", "reorder_wmt",
                                             "reorder_200k"],
                    help="run this experiment instead of the side-by-side mode")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="--experiment: more Hydra overrides")
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--sigma2", type=float, default=0.01)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    add_output_args(ap, "reorder")
    args = ap.parse_args(argv)
    if args.experiment:
        with tempfile.TemporaryDirectory(prefix="reorder-bench-") as tmp:
            cmd = [sys.executable, str(ROOT / "train.py"), f"experiment={args.experiment}",
                   *args.set, f"hydra.run.dir={tmp}/run", "+progress=false"]
            run = run_command(cmd)
            if run["returncode"] != 0:
                raise SystemExit(f"train.py failed:\n{run['stderr']}")
            results = json.loads((Path(tmp) / "run" / "results.json").read_text())
        n = int(results["data"]["sentence_pairs"])
        desc = machine()
        rows = rows_from_results(results, _dataset(n), desc) + [make_row(
            "reorder", _dataset(n), "whole experiment", wall_s=run["wall_s"],
            cpu_s=run["cpu_s"], peak_rss_mib=run["peak_rss_mib"], machine_desc=desc,
            note=f"{results['data']['train_examples']} training / "
                 f"{results['data']['test_examples']} held-out phrase pairs")]
    else:
        rows = side_by_side(args)
    for r in rows:
        print(f"{r['dataset']:<14} {r['system']:<24} {r['metrics']}  wall {r['wall_s']} s")
    if not args.no_save:
        print(f"wrote {write_rows('reorder', rows, args.results)}")
    return rows


if __name__ == "__main__":
    main()
