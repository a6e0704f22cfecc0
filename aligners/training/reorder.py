"""The `reorder` task: extract, featurise, train and compare the reordering models.

`python train.py experiment=reorder_emnlp_table2` (primal vs dual at three eps, Table 2 and
Figure 1 of the EMNLP paper) or `experiment=reorder_wmt` (naive Bayes, MI feature
selection, model size and speed vs the lexicalized table: WMT Figure 2 and Table 5).
The split is by sentence pair: the last `heldout_fraction` of the pairs is held out, and
a dev slice just before it (`dev_fraction`) is carved from the training pairs when a
setting must be chosen. Every model is trained through `LitReorderer` (Lightning, with
`cfg.trainer` / `cfg.logger` / `cfg.callbacks`), exported through `aligners/export.py` into
`models/<name>/`, and scored; writes `metrics.json` (split -> `<model>_error`), `results.json`
(timings, histories) and PNG plots in the output folder.

`evaluate(cfg)` loads `cfg.ckpt_path` (one of those model folders, or a file inside it) with
`aligners.load` and scores it on the configured test data: `data.test_src/test_tgt/test_align`
when given, else the same held-out (or dev) slice of `cfg.data` as training.
"""

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from aligners.config_checks import from_config
from aligners.errors import AlignersInputError
from aligners.features.reorder import (
    ReorderFeaturizer,
    collect_examples,
    csr_to_torch,
    fit_feature_vocab,
    iter_phrase_strings,
    to_csr,
)
from aligners.metrics import write_metrics_json
from aligners.models.reorder import NaiveBayes
from aligners.models.reorder import mutual_information as mi_scores
from aligners.models.reorder._common import error_rate
from aligners.models.reorder.config import ReorderConfig, ReorderData, ReorderRun
from aligners.models.reorder.dual_mlr import warmup as dual_warmup
from aligners.models.reorder.mlr import warmup as mlr_warmup
from aligners.phrases import load_corpus

__all__ = ["KINDS", "train", "evaluate", "dir_size"]

# export kinds this task writes and `evaluate` accepts
KINDS = ("reorder-lexical", "reorder-naive-bayes", "reorder-primal-mlr", "reorder-dual-mlr")


def dir_size(path) -> int:
    """Bytes under a file or folder."""
    p = Path(path)
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def _timed(fn, repeats: int = 3):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


def _resolve(path: str, cfg: DictConfig) -> str:
    """A relative data path is under `paths.data_root` (default `../shared/data`)."""
    from aligners.data.paths import data_root

    if os.path.isabs(path):
        return path
    root = cfg.paths.get("data_root") or str(data_root())
    return os.path.join(root, path)


def _settings(cfg: DictConfig) -> tuple[ReorderConfig, ReorderData, ReorderRun]:
    """The task's model / data / top-level settings over their dataclass defaults."""
    return (from_config(ReorderConfig, cfg.model, "model"),
            from_config(ReorderData, cfg.data, "data"),
            from_config(ReorderRun, cfg, "", strict=False))


def _as_list(value) -> list:
    """A setting that takes one value or a list (one model each) as a list."""
    return list(value) if isinstance(value, list | tuple) else [value]


def train(cfg: DictConfig) -> dict:
    torch.set_num_threads(int(cfg.get("threads", 2)))
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rc, d, run = _settings(cfg)
    x, feat_cfg = rc.extract, rc.features
    gen = torch.Generator().manual_seed(int(cfg.seed))
    results: dict = {"config": OmegaConf.to_container(cfg, resolve=False)}

    # 1. stream extraction + feature codes (one pass over the corpus)
    from tqdm import tqdm

    featurizer = ReorderFeaturizer(context=bool(feat_cfg.context))
    corpus = load_corpus(_resolve(d.src, cfg), _resolve(d.tgt, cfg), _resolve(d.align, cfg),
                         limit=d.limit, lowercase=bool(d.lowercase))
    bar = tqdm(total=d.limit, desc="extract", unit="pair", mininterval=5,
               disable=not run.progress)
    start = time.perf_counter()
    raw = collect_examples(corpus, featurizer, max_length=int(x.max_length), mode=x.mode,
                           direction=x.direction, on_sentence=lambda: bar.update(1))
    bar.close()
    results["extract_seconds"] = time.perf_counter() - start
    n_sent = raw.n_sentences
    test_cut = int(round(n_sent * (1 - float(d.heldout_fraction))))
    dev_cut = int(round(test_cut * (1 - float(d.dev_fraction))))
    rows = np.arange(len(raw))
    train_rows = rows[raw.sentence < dev_cut]
    test_rows = rows[raw.sentence >= test_cut]
    if run.evaluate_on == "dev":
        test_rows = rows[(raw.sentence >= dev_cut) & (raw.sentence < test_cut)]
    start = time.perf_counter()
    vocab = fit_feature_vocab(raw, train_rows, min_count=int(feat_cfg.min_count))
    X_train = csr_to_torch(to_csr(raw, train_rows, vocab))
    X_test = csr_to_torch(to_csr(raw, test_rows, vocab))
    y_train, y_test = raw.labels[train_rows], raw.labels[test_rows]
    raw.codes = np.zeros(0, dtype=np.int64)  # free the flat codes (the CSR matrices stay)
    results["feature_seconds"] = time.perf_counter() - start
    F = len(vocab)
    mlr_warmup()  # JIT compile outside every timed fit
    dual_warmup()
    results["data"] = {
        "sentence_pairs": n_sent, "train_pairs": dev_cut, "test_from_pair": test_cut,
        "evaluated_on": run.evaluate_on,
        "train_examples": int(len(train_rows)), "test_examples": int(len(test_rows)),
        "features": F, "train_nnz": int(X_train._nnz()),
        "train_class_fractions":
            (np.bincount(y_train, minlength=3) / max(len(y_train), 1)).tolist(),
        "majority_error": float(1 - np.bincount(y_test, minlength=3)[
            np.bincount(y_train, minlength=3).argmax()] / max(len(y_test), 1)),
    }
    print(json.dumps(results["data"]), flush=True)
    feature_list = featurizer.describe(vocab)
    models_dir = out_dir / "models"
    m = rc.models
    rep = int(run.speed_repeats)
    progress = bool(run.progress)
    meta = {"extract": {"max_length": int(x.max_length), "orientation": str(x.mode),
                        "direction": str(x.direction), "lowercase": bool(d.lowercase)},
            "features": {"min_count": int(feat_cfg.min_count), "context": bool(feat_cfg.context)}}

    def fit(name, max_epochs, train_batch, val_batch=None, **hp):
        from aligners.training.lit_reorder import LitReorderer, fit_reorderer

        lit = LitReorderer(generator=gen, seed=int(cfg.seed), **hp)
        fit_reorderer(lit, train_batch, cfg=cfg, name=name, max_epochs=max_epochs,
                      val_batch=val_batch, progress=progress)
        return lit

    def record(name, lit, log_proba_fn, save_dir, extra=None):
        log_proba, pred_s = _timed(log_proba_fn, rep)
        rec = {"train_seconds": lit.train_seconds,
               "heldout_error": error_rate(log_proba, y_test),
               "predict_seconds": pred_s,
               "predictions_per_second": len(y_test) / pred_s if pred_s > 0 else None,
               "size_bytes": dir_size(save_dir) if save_dir else None, **(extra or {})}
        results.setdefault("models", {})[name] = rec
        print(name, json.dumps(rec), flush=True)
        return rec

    if m.lexical:
        lit = fit("lexical", 1, (raw.keys[train_rows], y_train), model="lexical",
                  smoothing=float(rc.lexical.smoothing))
        lex = lit.model
        lex.save(models_dir / "lexical", meta=meta)
        extra = {}
        if rc.lexical.write_table:
            table = out_dir / "reordering-table.wbe-msd-backward-fe"
            corpus = load_corpus(_resolve(d.src, cfg), _resolve(d.tgt, cfg),
                                 _resolve(d.align, cfg), limit=dev_cut,
                                 lowercase=bool(d.lowercase))
            extra["moses_table_lines"] = lex.write_moses_table(table, iter_phrase_strings(
                corpus, max_length=int(x.max_length), mode=x.mode))
            extra["moses_table_bytes"] = dir_size(table)
            if not rc.lexical.keep_table:
                os.remove(table)
        test_keys = raw.keys[test_rows]
        record("lexical", lit, lambda: lex.predict_log_proba(test_keys), models_dir / "lexical",
               extra)

    if m.naive_bayes:
        nbc = rc.naive_bayes
        inferences = _as_list(nbc.inference)
        for inference in inferences:
            lit = fit(f"nb_{inference}", 1, (X_train, y_train), model="naive_bayes",
                      num_features=F, alpha=float(nbc.alpha), inference=str(inference))
            path = models_dir / f"nb_{inference}"
            lit.model.save(path, meta=meta, features=feature_list)
            record(f"nb_{inference}", lit, lambda nb=lit.model: nb.predict_log_proba(X_test),
                   path)
        if nbc.mi_fractions:
            results["mi_curve"] = _mi_curve(nbc, inferences, X_train, y_train, X_test, y_test, F,
                                            feature_list, models_dir, meta)

    if m.primal:
        pc = rc.primal
        track = pc.track_heldout  # held-out error per epoch (time not counted)
        lit = fit("primal", int(pc.epochs), (X_train, y_train),
                  (X_test, y_test) if track else None, model="primal", num_features=F,
                  sigma2=float(pc.sigma2), lr=float(pc.lr))
        primal = lit.model
        primal.save(models_dir / "primal", meta=meta, features=feature_list)
        record("primal", lit, lambda: primal.predict_log_proba(X_test), models_dir / "primal",
               {"epochs": int(pc.epochs), "heldout_error_per_epoch": lit.val_errors,
                "history": primal.history})

    if m.dual:
        dc = rc.dual
        for eps in _as_list(dc.eps):
            lit = fit(f"dual_eps{eps}", int(dc.max_iter), (X_train, y_train), model="dual",
                      num_features=F, sigma2=float(dc.sigma2), eps=float(eps),
                      init_eps=float(dc.init_eps), max_trial=int(dc.max_trial),
                      reset_step=bool(dc.reset_step), step=float(dc.step),
                      step_growth=float(dc.step_growth))
            dual = lit.model
            path = models_dir / f"dual_eps{eps}"
            dual.save(path, meta=meta, features=feature_list)
            record(f"dual_eps{eps}", lit, lambda dual=dual: dual.predict_log_proba(X_test),
                   path, {"eps": float(eps), "history": dual.history,
                          "iterations": len(dual.history)})

    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=float))
    split = "dev" if run.evaluate_on == "dev" else "heldout"
    row = {f"{name}_error": rec["heldout_error"] for name, rec in results.get("models", {}).items()
           if np.isfinite(rec["heldout_error"])}
    if np.isfinite(results["data"]["majority_error"]):
        row["majority_error"] = results["data"]["majority_error"]
    write_metrics_json(out_dir / "metrics.json", {split: row})
    _plots(results, out_dir)
    return results


def _mi_curve(nbc, inferences, X_train, y_train, X_test, y_test, F, feature_list, models_dir,
              meta) -> list:
    """Error of NB (each inference) after removing the lowest-MI fraction of features.

    An analysis sweep: each point is one counting pass (`NaiveBayes.fit`), not a Lightning
    run; the exported size is measured on a temporary model folder, removed afterwards.
    """
    scores = mi_scores(X_train, y_train, num_classes=3).numpy()
    order = np.argsort(scores, kind="stable")  # lowest MI first
    X_train_d, X_test_d = X_train.to_sparse_coo(), X_test.to_sparse_coo()
    curve = []
    for frac in nbc.mi_fractions:
        n_drop = int(round(float(frac) * F))
        keep = np.sort(order[n_drop:])
        Xtr = _select_columns(X_train_d, keep, F)
        Xte = _select_columns(X_test_d, keep, F)
        row = {"fraction_removed": float(frac), "features": int(len(keep)),
               "threshold": float(scores[order[n_drop - 1]]) if n_drop > 0 else 0.0}
        for inference in inferences:
            nb = NaiveBayes(num_features=len(keep), alpha=float(nbc.alpha),
                            inference=inference).fit(Xtr, y_train)
            row[f"error_{inference}"] = error_rate(nb.predict_log_proba(Xte), y_test)
            if inference == inferences[0]:  # size on disk, then the folder is removed
                with tempfile.TemporaryDirectory(prefix="aligners-nb-mi-") as tmp:
                    path = Path(tmp) / "nb_mi"
                    nb.save(path, meta=meta, features=[feature_list[i] for i in keep])
                    row["size_bytes"] = dir_size(path)
        curve.append(row)
        print("mi", json.dumps(row), flush=True)
    return curve


def _select_columns(X_coo: torch.Tensor, keep: np.ndarray, F: int) -> torch.Tensor:
    """Columns `keep` of a COO (E, F) matrix, renumbered, as CSR."""
    remap = torch.full((F,), -1, dtype=torch.int64)
    remap[torch.from_numpy(keep)] = torch.arange(len(keep))
    X_coo = X_coo.coalesce()
    idx, val = X_coo.indices(), X_coo.values()
    new_col = remap[idx[1]]
    ok = new_col >= 0
    out = torch.sparse_coo_tensor(torch.stack([idx[0][ok], new_col[ok]]), val[ok],
                                  size=(X_coo.shape[0], len(keep)), check_invariants=False)
    return out.coalesce().to_sparse_csr()


def _plots(results: dict, out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    duals = {k: v for k, v in results.get("models", {}).items() if k.startswith("dual_eps")}
    if duals:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for rec in duals.values():
            fr = [100 * h["active_fraction"] for h in rec["history"]]
            ax.plot(range(1, len(fr) + 1), fr, marker="o", ms=3, label=f"eps = {rec['eps']}")
        ax.set_xlabel("training iteration")
        ax.set_ylabel("% active phrase pairs")
        ax.set_title("Dual MLR shrinking (EMNLP Fig. 1)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "reorder_active_set.png", dpi=120)
        plt.close(fig)
    curve = results.get("mi_curve")
    if curve:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        fr = [100 * r["fraction_removed"] for r in curve]
        for key in [k for k in curve[0] if k.startswith("error_")]:
            ax.plot(fr, [100 * r[key] for r in curve], marker="o", ms=3,
                    label=f"naive Bayes {key[6:]}")
        if "lexical" in results.get("models", {}):
            ax.axhline(100 * results["models"]["lexical"]["heldout_error"], ls="--", c="gray",
                       label="lexicalized")
        if "data" in results:
            ax.axhline(100 * results["data"]["majority_error"], ls=":", c="k",
                       label="majority class")
        ax.set_xlabel("% of features removed (lowest MI first)")
        ax.set_ylabel("held-out error (%)")
        ax.set_title("Naive Bayes vs MI feature reduction (WMT Fig. 2)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "reorder_nb_feature_reduction.png", dpi=120)
        plt.close(fig)


def _count_pairs(path: str, limit) -> int:
    """Lines of the (possibly gzipped) alignment file, at most `limit`."""
    from aligners.data.parallel import read_line_blocks

    n = 0
    for block in read_line_blocks(path):
        n += len(block)
        if limit is not None and n >= int(limit):
            return int(limit)
    return n


def _test_triples(cfg: DictConfig, lowercase: bool):
    """(name of the split, stream of (src, tgt, links)) that `evaluate` scores."""
    import itertools

    _, d, run = _settings(cfg)
    given = [d.test_src, d.test_tgt, d.test_align]
    if any(given):
        if not all(given):
            raise AlignersInputError("give all of data.test_src, data.test_tgt, data.test_align")
        paths = [_resolve(str(p), cfg) for p in given]
        for p in paths:
            if not Path(p).is_file():
                raise AlignersInputError("no such test file", path=p)
        return "test", load_corpus(*paths, limit=d.test_limit, lowercase=lowercase)
    paths = [_resolve(str(p), cfg) for p in (d.src, d.tgt, d.align)]
    for p in paths:
        if not Path(p).is_file():
            raise AlignersInputError("no such data file", path=p)
    n = _count_pairs(paths[2], d.limit)
    test_cut = int(round(n * (1 - float(d.heldout_fraction))))
    dev_cut = int(round(test_cut * (1 - float(d.dev_fraction))))
    corpus = load_corpus(*paths, limit=n, lowercase=lowercase)
    if run.evaluate_on == "dev":
        return "dev", itertools.islice(corpus, dev_cut, test_cut)
    return "heldout", itertools.islice(corpus, test_cut, None)


def evaluate(cfg: DictConfig) -> dict:
    """Score the saved model `cfg.ckpt_path` on the configured test data; writes and returns
    `metrics.json` ({split: {"error", "phrase_pairs"}})."""
    from aligners.export import resolve_model_folder
    from aligners.models.reorder import load_reorderer

    ckpt = cfg.get("ckpt_path")
    if not ckpt:
        raise AlignersInputError("evaluate needs ckpt_path=RUN/models/NAME (a reordering "
                                 "model folder written by the task or `aligners reorder train`)")
    reorderer = load_reorderer(resolve_model_folder(ckpt))
    split, triples = _test_triples(cfg, reorderer.lowercase)
    log_p, labels = reorderer.predict_corpus(triples)
    if len(labels) == 0:
        raise AlignersInputError("the test data has no phrase pairs to score")
    metrics = {split: {"error": error_rate(log_p, labels), "phrase_pairs": int(len(labels))}}
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_metrics_json(out_dir / "metrics.json", metrics)
    print(f"{reorderer.kind} ({ckpt}) on {split}: error {100 * metrics[split]['error']:.2f}% "
          f"over {len(labels)} phrase pairs", flush=True)
    return metrics
