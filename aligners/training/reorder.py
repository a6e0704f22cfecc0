"""The `reorder` task: extract, featurise, train and compare the reordering models.

`python train.py experiment=reorder_emnlp_table2` (primal vs dual at three eps, Table 2 and
Figure 1 of the EMNLP paper) or `experiment=reorder_wmt` (naive Bayes, MI feature
selection, model size and speed vs the lexicalized table: WMT Figure 2 and Table 5).
The split is by sentence pair: the last `heldout_fraction` of the pairs is held out, and
a dev slice just before it (`dev_fraction`) is carved from the training pairs when a
setting must be chosen. Writes `results.json` and PNG plots in the output folder.
"""

import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from aligners.features.reorder import (
    ReorderFeaturizer,
    collect_examples,
    csr_to_torch,
    fit_feature_vocab,
    iter_phrase_strings,
    to_csr,
)
from aligners.models.reorder import DualMLR, LexicalReordering, NaiveBayes, PrimalMLR
from aligners.models.reorder import mutual_information as mi_scores
from aligners.models.reorder._io import error_rate
from aligners.models.reorder.dual_mlr import warmup as dual_warmup
from aligners.models.reorder.mlr import warmup as mlr_warmup
from aligners.phrases import load_corpus

__all__ = ["train", "evaluate", "dir_size"]


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


def train(cfg: DictConfig) -> dict:
    torch.set_num_threads(int(cfg.get("threads", 2)))
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rc = cfg.model  # configs/model/reorder.yaml
    d, x, feat_cfg = cfg.data, rc.extract, rc.features
    gen = torch.Generator().manual_seed(int(cfg.seed))
    results: dict = {"config": OmegaConf.to_container(cfg, resolve=False)}

    # 1. stream extraction + feature codes (one pass over the corpus)
    from tqdm import tqdm

    featurizer = ReorderFeaturizer(context=bool(feat_cfg.context))
    corpus = load_corpus(_resolve(d.src, cfg), _resolve(d.tgt, cfg), _resolve(d.align, cfg),
                         limit=d.get("limit"), lowercase=bool(d.get("lowercase", False)))
    bar = tqdm(total=d.get("limit"), desc="extract", unit="pair", mininterval=5,
               disable=not cfg.get("progress", True))
    start = time.perf_counter()
    raw = collect_examples(corpus, featurizer, max_length=int(x.max_length), mode=x.mode,
                           direction=x.direction, on_sentence=lambda: bar.update(1))
    bar.close()
    results["extract_seconds"] = time.perf_counter() - start
    n_sent = raw.n_sentences
    test_cut = int(round(n_sent * (1 - float(d.heldout_fraction))))
    dev_cut = int(round(test_cut * (1 - float(d.get("dev_fraction", 0.0)))))
    rows = np.arange(len(raw))
    train_rows = rows[raw.sentence < dev_cut]
    test_rows = rows[raw.sentence >= test_cut]
    if cfg.get("evaluate_on", "heldout") == "dev":
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
        "evaluated_on": cfg.get("evaluate_on", "heldout"),
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
    rep = int(cfg.get("speed_repeats", 3))

    def record(name, model, seconds, log_proba_fn, save_dir, extra=None):
        log_proba, pred_s = _timed(log_proba_fn, rep)
        rec = {"train_seconds": seconds, "heldout_error": error_rate(log_proba, y_test),
               "predict_seconds": pred_s,
               "predictions_per_second": len(y_test) / pred_s if pred_s > 0 else None,
               "size_bytes": dir_size(save_dir) if save_dir else None, **(extra or {})}
        results.setdefault("models", {})[name] = rec
        print(name, json.dumps(rec), flush=True)
        return rec

    def save_with_features(model, path):
        model.save(path, extra={"feature_min_count": int(feat_cfg.min_count),
                                "context": bool(feat_cfg.context)})
        (Path(path) / "features.json").write_text(json.dumps(feature_list))

    if m.get("lexical", True):
        start = time.perf_counter()
        lex = LexicalReordering(smoothing=float(rc.lexical.smoothing))
        lex.fit(raw.keys[train_rows], y_train)
        secs = time.perf_counter() - start
        lex.save(models_dir / "lexical")
        extra = {}
        if rc.lexical.get("write_table", True):
            table = out_dir / "reordering-table.wbe-msd-backward-fe"
            corpus = load_corpus(_resolve(d.src, cfg), _resolve(d.tgt, cfg),
                                 _resolve(d.align, cfg), limit=dev_cut,
                                 lowercase=bool(d.get("lowercase", False)))
            extra["moses_table_lines"] = lex.write_moses_table(table, iter_phrase_strings(
                corpus, max_length=int(x.max_length), mode=x.mode))
            extra["moses_table_bytes"] = dir_size(table)
            if not rc.lexical.get("keep_table", False):
                os.remove(table)
        test_keys = raw.keys[test_rows]
        record("lexical", lex, secs, lambda: lex.predict_log_proba(test_keys),
               models_dir / "lexical", extra)

    if m.get("naive_bayes", False):
        nbc = rc.naive_bayes
        for inference in nbc.inference:
            start = time.perf_counter()
            nb = NaiveBayes(num_features=F, alpha=float(nbc.alpha), inference=inference)
            nb.fit(X_train, y_train)
            secs = time.perf_counter() - start
            path = models_dir / f"nb_{inference}"
            save_with_features(nb, path)
            record(f"nb_{inference}", nb, secs, lambda nb=nb: nb.predict_log_proba(X_test), path)
        if nbc.get("mi_fractions"):
            results["mi_curve"] = _mi_curve(nbc, X_train, y_train, X_test, y_test, F,
                                            feature_list, models_dir)

    if m.get("primal", False):
        pc = rc.primal
        per_epoch = []

        def track(epoch, model):  # held-out error after each epoch (time not counted)
            per_epoch.append(error_rate(model.predict_log_proba(X_test), y_test))

        primal = PrimalMLR(num_features=F, sigma2=float(pc.sigma2))
        primal.fit(X_train, y_train, epochs=int(pc.epochs), lr=float(pc.lr), generator=gen,
                   callback=track if pc.get("track_heldout", True) else None)
        secs = sum(h["seconds"] for h in primal.history) + primal.setup_seconds
        save_with_features(primal, models_dir / "primal")
        record("primal", primal, secs, lambda: primal.predict_log_proba(X_test),
               models_dir / "primal", {"epochs": int(pc.epochs),
                                       "heldout_error_per_epoch": per_epoch,
                                       "history": primal.history})

    if m.get("dual", False):
        dc = rc.dual
        for eps in dc.eps:
            start = time.perf_counter()
            dual = DualMLR(num_features=F, sigma2=float(dc.sigma2)).fit(
                X_train, y_train, eps=float(eps), max_iter=int(dc.max_iter),
                init_eps=float(dc.init_eps), max_trial=int(dc.max_trial),
                reset_step=bool(dc.reset_step), step=float(dc.get("step", 1.0)),
                step_growth=float(dc.get("step_growth", 1.0)), generator=gen)
            secs = time.perf_counter() - start
            path = models_dir / f"dual_eps{eps}"
            save_with_features(dual, path)
            record(f"dual_eps{eps}", dual, secs, lambda dual=dual: dual.predict_log_proba(X_test),
                   path, {"eps": float(eps), "history": dual.history,
                          "iterations": len(dual.history)})

    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=float))
    _plots(results, out_dir)
    return results


def _mi_curve(nbc, X_train, y_train, X_test, y_test, F, feature_list, models_dir) -> list:
    """Error of NB (each inference) after removing the lowest-MI fraction of features."""
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
        for inference in nbc.inference:
            nb = NaiveBayes(num_features=len(keep), alpha=float(nbc.alpha),
                            inference=inference).fit(Xtr, y_train)
            row[f"error_{inference}"] = error_rate(nb.predict_log_proba(Xte), y_test)
            if inference == nbc.inference[0]:
                path = models_dir / "nb_mi_tmp"
                nb.save(path)
                (path / "features.json").write_text(json.dumps([feature_list[i] for i in keep]))
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


def evaluate(cfg: DictConfig) -> dict:
    """Evaluation happens inside `train` (held-out split); re-read its results.json."""
    path = Path(cfg.get("results", Path(cfg.paths.output_dir) / "results.json"))
    return json.loads(path.read_text())
