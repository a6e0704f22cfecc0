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
from dataclasses import asdict
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
from aligners.models.reorder import folder as reorder_folder
from aligners.models.reorder import mutual_information as mi_scores
from aligners.models.reorder._common import DEFAULTS, error_rate
from aligners.models.reorder.config import ReorderConfig, ReorderData, ReorderRun
from aligners.models.reorder.dual_mlr import warmup as dual_warmup
from aligners.models.reorder.mlr import warmup as mlr_warmup
from aligners.models.reorder.naive_bayes import mi_kept
from aligners.phrases import load_corpus
from aligners.plots import plot_reorder

__all__ = ["train", "evaluate", "dir_size"]


def dir_size(path) -> int:
    """Bytes under a file or folder."""
    p = Path(path)
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


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


def _cuts(n: int, d: ReorderData) -> tuple[int, int]:
    """The first pair of the dev slice and of the held-out pairs, of n pairs."""
    test_cut = int(round(n * (1 - float(d.heldout_fraction))))
    return int(round(test_cut * (1 - float(d.dev_fraction)))), test_cut


def _as_list(value) -> list:
    """A setting that takes one value or a list (one model each) as a list."""
    return list(value) if isinstance(value, list | tuple) else [value]


def train(cfg: DictConfig) -> dict:
    torch.set_num_threads(int(cfg.get("threads", 2)))
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {"config": OmegaConf.to_container(cfg, resolve=False)}
    f = _Fits(cfg, out_dir, results)
    print(json.dumps(results["data"]), flush=True)
    for name in ("lexical", "naive_bayes", "primal", "dual"):  # the models switched on
        if getattr(f.rc.models, name):
            getattr(f, name)()
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=float))
    split = "dev" if f.run.evaluate_on == "dev" else "heldout"
    row = {f"{name}_error": rec["heldout_error"] for name, rec in results.get("models", {}).items()
           if np.isfinite(rec["heldout_error"])}
    if np.isfinite(results["data"]["majority_error"]):
        row["majority_error"] = results["data"]["majority_error"]
    write_metrics_json(out_dir / "metrics.json", {split: row})
    plot_reorder(results, out_dir)
    return results


class _Fits:
    """One run: the examples of one streaming pass over the corpus (extraction + feature
    codes), split by sentence pair (test = the held-out pairs, or the dev slice with
    evaluate_on=dev), their feature matrices (`results["data"]`), and the fit, export and
    scoring of each model kind (through `LitReorderer`, the family's one trainer), recorded
    into `results["models"]`."""

    def __init__(self, cfg, out_dir, results):
        from tqdm import tqdm

        self.rc, self.d, self.run = rc, d, run = _settings(cfg)
        self.cfg, self.results, self.out_dir = cfg, results, out_dir
        featurizer = ReorderFeaturizer(context=bool(rc.features.context))
        corpus = tqdm(self.corpus(d.train_limit), total=d.train_limit, desc="extract",
                      unit="pair", mininterval=5, disable=not run.progress)
        start = time.perf_counter()
        raw = collect_examples(corpus, featurizer, max_length=int(rc.extract.max_length),
                               mode=rc.extract.mode, direction=rc.extract.direction)
        results["extract_seconds"] = time.perf_counter() - start
        self.dev_cut, test_cut = _cuts(raw.n_sentences, d)  # dev_cut: the training pairs
        test = raw.sentence >= test_cut
        if run.evaluate_on == "dev":
            test = (raw.sentence >= self.dev_cut) & ~test
        train, test = np.flatnonzero(raw.sentence < self.dev_cut), np.flatnonzero(test)
        start = time.perf_counter()
        vocab = fit_feature_vocab(raw, train, min_count=int(rc.features.min_count))
        self.X_train = csr_to_torch(to_csr(raw, train, vocab))
        self.X_test = csr_to_torch(to_csr(raw, test, vocab))
        self.keys = raw.keys[train], raw.keys[test]
        self.y_train, self.y_test = y_train, y_test = raw.labels[train], raw.labels[test]
        raw.codes = np.zeros(0, dtype=np.int64)  # free the flat codes (the CSR matrices stay)
        results["feature_seconds"] = time.perf_counter() - start
        self.F = len(vocab)
        mlr_warmup()  # JIT compile outside every timed fit
        dual_warmup()
        self.features = featurizer.describe(vocab)
        self.gen = torch.Generator().manual_seed(int(cfg.seed))
        x, f = rc.extract, rc.features
        self.meta = reorder_folder.meta(max_length=x.max_length, orientation=x.mode,
                                       direction=x.direction, lowercase=d.lowercase,
                                       min_count=f.min_count, context=f.context)
        train_counts = np.bincount(y_train, minlength=3)
        results["data"] = {
            "sentence_pairs": raw.n_sentences, "train_pairs": self.dev_cut,
            "test_from_pair": test_cut, "evaluated_on": run.evaluate_on,
            "train_examples": int(len(y_train)), "test_examples": int(len(y_test)),
            "features": self.F, "train_nnz": int(self.X_train._nnz()),
            "train_class_fractions": (train_counts / max(len(y_train), 1)).tolist(),
            "majority_error": float(1 - np.bincount(y_test, minlength=3)[
                train_counts.argmax()] / max(len(y_test), 1)),
        }

    def corpus(self, limit):
        """The first `limit` (None: all) sentence pairs of the data, streamed."""
        d, cfg = self.d, self.cfg
        return load_corpus(_resolve(d.src, cfg), _resolve(d.tgt, cfg), _resolve(d.align, cfg),
                           limit=limit, lowercase=bool(d.lowercase))

    def fit(self, label: str, kind: str, section, epochs: int = 1, track: bool = False,
            extra=None, **over):
        """Model `kind` with the settings of config `section` (and `over`) trained under
        `cfg.trainer` for at most `epochs` epochs (`track`: the held-out error after each),
        saved as models/<label>, scored on the test rows (timed) and recorded as `label` with
        `extra(lit)`; returns the LitReorderer."""
        from aligners.training.lit_reorder import LitReorderer, fit_reorderer

        hp = {k: v for k, v in asdict(section).items() if k in DEFAULTS}
        lexical = kind == "lexical"
        train, test = self.keys if lexical else (self.X_train, self.X_test)
        lit = LitReorderer(model=kind, num_features=0 if lexical else self.F,
                           generator=self.gen, seed=int(self.cfg.seed), **{**hp, **over})
        fit_reorderer(lit, (train, self.y_train), cfg=self.cfg, name=label, max_epochs=epochs,
                      val_batch=(test, self.y_test) if track else None,
                      progress=bool(self.run.progress))
        path = self.out_dir / "models" / label
        lit.model.save(path, meta=self.meta, features=None if lexical else self.features)
        more = extra(lit) if extra else {}
        times = []
        for _ in range(int(self.run.speed_repeats)):
            start = time.perf_counter()
            log_proba = lit.model.predict_log_proba(test)
            times.append(time.perf_counter() - start)
        pred_s = float(np.median(times))
        rec = {"train_seconds": lit.fitting.seconds,
               "heldout_error": error_rate(log_proba, self.y_test),
               "predict_seconds": pred_s,
               "predictions_per_second": len(self.y_test) / pred_s if pred_s > 0 else None,
               "size_bytes": dir_size(path), **more}
        self.results.setdefault("models", {})[label] = rec
        print(label, json.dumps(rec), flush=True)
        return lit

    def lexical(self):
        self.fit("lexical", "lexical", self.rc.lexical, extra=self.moses_table)

    def moses_table(self, lit) -> dict:
        """With `lexical.write_table`, the Moses table of `lit.model` over the training pairs:
        its lines and bytes (kept with `lexical.keep_table`)."""
        lc, x = self.rc.lexical, self.rc.extract
        if not lc.write_table:
            return {}
        table = self.out_dir / "reordering-table.wbe-msd-backward-fe"
        with open(table, "w", encoding="utf-8") as fh:
            lines = lit.model.write_moses_table(fh, iter_phrase_strings(
                self.corpus(self.dev_cut), max_length=int(x.max_length), mode=x.mode))
        out = {"moses_table_lines": lines, "moses_table_bytes": dir_size(table)}
        if not lc.keep_table:
            os.remove(table)
        return out

    def naive_bayes(self):
        nbc = self.rc.naive_bayes
        fitted = {inference: self.fit(f"nb_{inference}", "naive_bayes", nbc,
                                      inference=inference).model
                  for inference in _as_list(nbc.inference)}
        if nbc.mi_fractions:
            self.results["mi_curve"] = self.mi_curve(nbc.mi_fractions, fitted)

    def primal(self):
        pc = self.rc.primal
        self.fit("primal", "primal", pc, int(pc.epochs), track=pc.track_heldout,
                 extra=lambda lit: {"epochs": int(pc.epochs), "heldout_error_per_epoch":
                                    lit.val_errors, "history": lit.model.history})

    def dual(self):
        dc = self.rc.dual
        for eps in _as_list(dc.eps):
            self.fit(f"dual_eps{eps}", "dual", dc, int(dc.max_iter), eps=eps,
                     extra=lambda lit, eps=eps: {"eps": float(eps), "history": lit.model.history,
                                                 "iterations": len(lit.model.history)})

    def mi_curve(self, fractions, fitted: dict) -> list:
        """Error of the fitted NB models (inference -> NaiveBayes) after removing the
        lowest-MI fraction of features (`NaiveBayes.select`: no refit). An analysis sweep,
        not a Lightning run; the exported size is measured on a temporary model folder."""
        scores = mi_scores(self.X_train, self.y_train, num_classes=3).numpy()
        X_test = self.X_test.to_sparse_coo()
        curve = []
        for frac in fractions:
            keep = mi_kept(scores, frac)
            dropped = scores[np.setdiff1d(np.arange(self.F), keep)]
            Xte = X_test.index_select(1, torch.from_numpy(keep)).coalesce().to_sparse_csr()
            row = {"fraction_removed": float(frac), "features": int(len(keep)),
                   "threshold": float(dropped.max()) if len(dropped) else 0.0}
            for k, (inference, full) in enumerate(fitted.items()):
                nb = full.select(keep)
                row[f"error_{inference}"] = error_rate(nb.predict_log_proba(Xte), self.y_test)
                if k == 0:  # size on disk, then the folder is removed
                    with tempfile.TemporaryDirectory(prefix="aligners-nb-mi-") as tmp:
                        path = Path(tmp) / "nb_mi"
                        nb.save(path, meta=self.meta, features=[self.features[i] for i in keep])
                        row["size_bytes"] = dir_size(path)
            curve.append(row)
            print("mi", json.dumps(row), flush=True)
        return curve


def _test_triples(cfg: DictConfig, lowercase: bool):
    """(name of the split, stream of (src, tgt, links)) that `evaluate` scores."""
    import itertools

    from aligners.data.parallel import read_lines

    _, d, run = _settings(cfg)
    given = [d.test_src, d.test_tgt, d.test_align]
    if any(given) and not all(given):
        raise AlignersInputError("give all of data.test_src, data.test_tgt, data.test_align")
    paths = [_resolve(str(p), cfg) for p in (given if any(given) else (d.src, d.tgt, d.align))]
    for p in paths:
        if not Path(p).is_file():
            raise AlignersInputError(f"no such {'test' if any(given) else 'data'} file", path=p)
    if any(given):
        return "test", load_corpus(*paths, limit=d.test_limit, lowercase=lowercase)
    n = sum(1 for _ in itertools.islice(read_lines(paths[2]), d.train_limit))  # pairs
    dev_cut, test_cut = _cuts(n, d)
    corpus = load_corpus(*paths, limit=n, lowercase=lowercase)
    if run.evaluate_on == "dev":
        return "dev", itertools.islice(corpus, dev_cut, test_cut)
    return "heldout", itertools.islice(corpus, test_cut, None)


def evaluate(cfg: DictConfig) -> dict:
    """Score the saved model `cfg.ckpt_path` on the configured test data; writes and returns
    `metrics.json` ({split: {"error", "phrase_pairs"}})."""
    from aligners.export import load, resolve_model_folder

    ckpt = cfg.get("ckpt_path")
    if not ckpt:
        raise AlignersInputError("evaluate needs ckpt_path=RUN/models/NAME (a reordering "
                                 "model folder written by the task or `aligners reorder train`)")
    reorderer = load(resolve_model_folder(ckpt), verb="reorder")
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
