"""The one word-alignment experiment: the Hydra task of every word family (hmm, bayesian,
gappy-hsmm) is a `WordTask` whose subclass overrides only what differs (its hooks).

`train(cfg)`:
1. the text (`load_text`): the training split (`data.train_limit` pairs at most), then
   every gold split's text (the eval splits', then the tuning split's): an unsupervised
   aligner aligns the text it learns from; everything lowercased under `data.lowercase`;
2. the family's `fit` (hook `fit`; by default `Family.model_class().fit` on the text with
   the config of `cfg.model`, hook `config`);
3. the decoding: chosen on the tuning split (`data.tune_split`, never a test split) by the
   one chooser (`aligners.inference.choose`) over `model.tune_grid`; without one,
   `model.decoding` (the family's default where the config has none);
4. every gold split decoded (hook `part`: by default `model.decode` of its text), written
   as `alignments.<split>.txt` (Pharaoh: what `aligners align` writes for that text and
   decoding) and scored (aer, precision, recall, f1);
5. the model folder `<run>/model` (`model.save_to`, with the decoding; not with
   `save_model: false`) and `<run>/metrics.json` (the splits, and the rows of `fit`).

`evaluate(cfg)`: the model folder `ckpt_path` scored on the eval splits with its saved
decoding (`metrics.json` in the run folder).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from aligners.errors import AlignersInputError
from aligners.families import family
from aligners.inference.choose import choose_decoding, score, sym_lines
from aligners.metrics import write_metrics_json
from aligners.models.aligned import Aligned, Decoding, RunOptions, WordAlignment

__all__ = ["Text", "Fitted", "WordTask", "load_text"]


@dataclass
class Text:
    """The task's text. `pairs`: a stream of token pairs, the training text then each gold
    split's text in `gold` order; `gold`: split -> AlignedPairs (the eval splits, then the
    tuning split `tune`, or None)."""

    pairs: Iterator
    gold: dict[str, list]
    tune: str | None

    def span(self, split: str, n_pairs: int) -> tuple[int, int]:
        """[start, end) of `split` in the text of `n_pairs` pairs (the gold splits close it)."""
        start = n_pairs - sum(len(g) for g in self.gold.values())
        for name, g in self.gold.items():
            if name == split:
                return start, start + len(g)
            start += len(g)
        raise KeyError(split)


@dataclass
class Fitted:
    """What a family's `fit` hands to the skeleton: the model, the text aligned in training
    (None where `part` decodes each split anew), metric rows of the training ("train" ->
    pairs, seconds, ...) and a decoding the family's regimen chose (None: the skeleton's)."""

    model: WordAlignment
    aligned: Aligned | None = None
    rows: dict = field(default_factory=dict)
    decoding: Decoding | None = None


def load_text(cfg: DictConfig, *, training: bool = True) -> Text:
    """cfg.data's text (see the module doc); without `training`, the eval splits alone."""
    from aligners.data.datasets import iter_parallel, load, lowercased

    data = cfg.data
    low = bool(data.get("lowercase", False))
    tune = data.get("tune_split") if training else None
    names = dict.fromkeys([*data.eval_splits, *([tune] if tune else [])])
    gold = {s: lowercased(load(data.name, s)) if low else load(data.name, s) for s in names}

    def stream():
        if training and data.get("train_split"):
            it = iter_parallel(data.name, data.train_split, lowercase=low)
            limit = data.get("train_limit")
            yield from (itertools.islice(it, limit) if limit else it)
        for pairs in gold.values():
            for p in pairs:
                yield p.src, p.tgt

    return Text(stream(), gold, tune)


class _Scores:
    """split -> {aer, precision, recall, f1} (`metrics`), and the same rows as a table."""

    def __init__(self):
        self.metrics, self.rows = {}, []

    def add(self, split: str, gold: list, lines, dec: Decoding) -> None:
        s = score(gold, lines)
        self.metrics[split] = {"aer": s.aer, "precision": s.precision, "recall": s.recall,
                               "f1": s.f1}
        self.rows.append(f"{split:<12} {f'{dec.method}>{dec.threshold} {dec.symmetrize}':<34} "
                         f"{s.precision:6.4f} {s.recall:6.4f} {s.aer:7.4f} {len(gold):6d}")

    def table(self) -> dict:
        """Print the table; returns the metrics."""
        head = f"{'split':<12} {'decoding':<34} {'prec':>6} {'rec':>6} {'AER':>7} {'pairs':>6}"
        print("\n".join([head, "-" * len(head), *self.rows]))
        return self.metrics


class WordTask:
    """A word family's Hydra task: `train` and `evaluate` (the skeleton) and its hooks."""

    name: str  # the family's name (aligners.families)
    viterbi_threshold: float = 0.5  # the threshold a chosen Viterbi decoding is saved with

    # ------------------------------------------------------------------ hooks
    def family_class(self) -> type[WordAlignment]:
        return family(self.name).model_class()

    def run_options(self, cfg: DictConfig) -> RunOptions:
        """How the model runs: cfg.threads torch threads, cfg.seed, `model.batch_cells`."""
        if self.family_class().USES_TORCH:
            import torch

            torch.set_num_threads(int(cfg.get("threads", 1)))
        return RunOptions(seed=int(cfg.get("seed", 0)),
                          batch_cells=cfg.model.get("batch_cells") if cfg.get("model") else None)

    def config(self, cfg: DictConfig):
        """The family's config dataclass from the fields of `cfg.model` it has."""
        cls = family(self.name).config_class()
        given = OmegaConf.to_container(cfg.model, resolve=True)
        return cls(**{k: v for k, v in given.items() if k in cls.__dataclass_fields__})

    def fit(self, cfg: DictConfig, text: Text, run: RunOptions) -> Fitted | None:
        """Train on `text.pairs` (None: this process is not rank 0 of a DDP run)."""
        t0 = time.time()
        model, aligned = self.family_class().fit(text.pairs, self.config(cfg), run)
        return Fitted(model, aligned, {"train": {"seconds": time.time() - t0}})

    def part(self, fitted: Fitted, text: Text, split: str, run: RunOptions) -> Aligned:
        """Gold split `split` aligned by the fitted model."""
        return fitted.model.decode([(p.src, p.tgt) for p in text.gold[split]], run)

    def finish(self, cfg: DictConfig, metrics: dict) -> None:
        """After metrics.json is written (a task without a Lightning loop logs here)."""

    # ------------------------------------------------------------------ the skeleton
    def decoding(self, cfg: DictConfig, fitted: Fitted, text: Text, run: RunOptions) -> Decoding:
        """Chosen on the tuning split, else `model.decoding` (else the family's default)."""
        cls = type(fitted.model)
        grid = cfg.model.get("tune_grid")
        if text.tune is not None and grid:
            chosen, aer = choose_decoding(
                self.part(fitted, text, text.tune, run), text.gold[text.tune],
                OmegaConf.to_container(grid), cls.METHODS, viterbi_threshold=self.viterbi_threshold)
            print(f"decoding chosen on {text.tune} (AER {aer:.4f}): {chosen}")
            return Decoding(**chosen)
        node = cfg.model.get("decoding")  # (its keys checked with the config: run.check)
        given = {} if node is None else OmegaConf.to_container(node, resolve=True)
        return cls.decoding_for(None, **given)

    def train(self, cfg: DictConfig) -> dict:
        """Train, decode, score and save (the module doc); returns the metrics."""
        run = self.run_options(cfg)
        out = Path(cfg.paths.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        text = load_text(cfg)
        fitted = self.fit(cfg, text, run)
        if fitted is None:
            return {}
        dec = fitted.decoding or self.decoding(cfg, fitted, text, run)
        scores = _Scores()
        for split, gold in text.gold.items():
            lines = sym_lines(self.part(fitted, text, split, run), dec)
            with open(out / f"alignments.{split}.txt", "w", encoding="utf-8") as f:
                f.writelines(x + "\n" for x in lines)
            scores.add(split, gold, lines, dec)
        metrics = {**scores.table(), **fitted.rows}
        if cfg.get("save_model", True):
            fitted.model.save_to(out / "model", dec)
        write_metrics_json(out / "metrics.json", metrics)
        self.finish(cfg, metrics)
        return metrics

    def evaluate(self, cfg: DictConfig) -> dict:
        """Score the model folder `ckpt_path` (a folder, a file in it or its run folder) on
        cfg.data's eval splits with its saved decoding; `metrics.json` in the run folder."""
        from aligners.export import load, resolve_model_folder

        if cfg.get("model_dir") is not None:
            raise AlignersInputError("model_dir= is not read; pass the model folder as "
                                     "ckpt_path=")
        folder = resolve_model_folder(cfg.get("ckpt_path"))
        run = self.run_options(cfg)
        text = load_text(cfg, training=False)
        scores = _Scores()
        for split, gold in text.gold.items():
            model = load(folder)  # anew per split: a Bayesian model's counts take in its text
            if not isinstance(model, self.family_class()):
                raise AlignersInputError(f"ckpt_path: not a model folder of the {self.name} "
                                         "family", path=str(folder))
            dec = model.choose_decoding()
            scores.add(split, gold, sym_lines(model.decode([(p.src, p.tgt) for p in gold], run),
                                              dec), dec)
        metrics = scores.table()
        out = cfg.get("paths", {}).get("output_dir")
        if out:
            Path(out).mkdir(parents=True, exist_ok=True)
            write_metrics_json(Path(out) / "metrics.json", metrics)
        return metrics
