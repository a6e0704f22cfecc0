"""Task `bayesian`: the Bayesian word aligner (collapsed Gibbs, Östling & Tiedemann 2016)
trained on cfg.data's text and scored on its gold splits.

`python train.py experiment=efmaral_wpt_roen`. The text is the training split (if any) plus
every gold and tuning split's text (an unsupervised aligner aligns the text it learns from).
Decoding (argmax or posterior threshold, symmetrization) comes from cfg.model.decoding, or
is chosen on cfg.data.tune_split by AER when one exists (never on a test split). Writes
`metrics.json` (split -> aer/precision/recall; "train" -> seconds), `alignments.<split>.txt`
and the model folder (`model/`, reusable by `aligners align --load-model`).

Sampling is not a Lightning loop: cfg.trainer must be a 1-device CPU trainer (the exact
sampler is CPU code; anything else is refused), cfg.logger receives the metrics, and
callbacks (checkpointing, progress bars) have no loop to attach to: a non-empty
cfg.callbacks is reported on stdout as unused.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from aligners.data.pharaoh import link_line
from aligners.metrics import evaluate_alignments, write_metrics_json

__all__ = ["train", "evaluate", "decode_and_score"]


def _check_trainer(cfg: DictConfig) -> None:
    t = cfg.get("trainer") or {}
    acc, dev = str(t.get("accelerator", "cpu")), t.get("devices", 1)
    if acc not in ("cpu", "auto") or dev not in (1, "1", "auto"):
        raise ValueError(f"task bayesian samples on one CPU process; trainer "
                         f"accelerator={acc!r} devices={dev!r} is not supported "
                         "(use trainer=cpu)")


def _texts(cfg: DictConfig):
    from aligners.data.datasets import iter_parallel, load

    gold = {s: load(cfg.data.name, s) for s in cfg.data.eval_splits}
    tune = load(cfg.data.name, cfg.data.tune_split) if cfg.data.get("tune_split") else None
    pairs = []
    if cfg.data.get("train_split"):
        it = iter_parallel(cfg.data.name, cfg.data.train_split)
        limit = cfg.data.get("train_limit")
        pairs.extend(itertools.islice(it, limit) if limit else it)
    spans = {}
    for name, g in [*gold.items(), *([("tune", tune)] if tune else [])]:
        spans[name] = (len(pairs), len(pairs) + len(g))
        pairs.extend((p.src, p.tgt) for p in g)
    return pairs, gold, tune, spans


def decode_and_score(marg, gold, span, decoding: dict):
    """(links, score) of the sentences span=(start, end) under `decoding`."""
    from aligners.models.bayesian.config import mean_threshold
    from aligners.models.bayesian.decode import direction_links, mean_links, span_sets
    from aligners.symmetrize import symmetrize_corpus

    th = mean_threshold(marg.corpus.n_sentences, decoding["threshold"])
    if decoding["method"] == "mean":
        links = span_sets(marg, mean_links(marg, th), span)
    else:
        th = th if decoding["method"] == "posterior" else None
        fwd = direction_links(marg, "fwd", threshold=th, span=span)
        rev = direction_links(marg, "rev", threshold=th, span=span)
        links = symmetrize_corpus(fwd, rev, decoding["symmetrize"])
    score = evaluate_alignments([p.alignment for p in gold], links, breakdowns=False).micro
    return links, score


def _sized(decoding: dict, n_pairs: int) -> dict:
    """`decoding` with a null threshold set by the text's size (config.mean_threshold)."""
    from aligners.models.bayesian.config import mean_threshold

    return {**decoding, "threshold": mean_threshold(n_pairs, decoding.get("threshold"))}


def _choose(marg, tune, span, grid: dict) -> tuple[dict, float]:
    """The one chooser (`aligners.inference.choose`) over the sampled tuning split."""
    from aligners.inference.choose import choose_decoding

    def score(method, th, heuristics):
        return [decode_and_score(marg, tune, span, {"method": method, "threshold": th,
                                                    "symmetrize": h})[1].aer
                for h in heuristics]

    return choose_decoding(grid, score)


def train(cfg: DictConfig) -> dict:
    """Sample cfg.data's text, decode, score every eval split, save model + metrics."""
    from hydra.utils import instantiate

    from aligners.models.bayesian import BayesAligner, BayesConfig
    from aligners.models.bayesian.io import save_bayes_aligner

    _check_trainer(cfg)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    pairs, gold, tune, spans = _texts(cfg)
    fields = BayesConfig.__dataclass_fields__
    mcfg = {k: v for k, v in OmegaConf.to_container(cfg.model, resolve=True).items()
            if k in fields}
    model = BayesAligner(BayesConfig(**mcfg))
    marg = model.align(pairs, seed=int(cfg.seed))
    sample_s = time.time() - t0
    decoding = _sized(OmegaConf.to_container(cfg.model.decoding, resolve=True), len(pairs))
    if tune is not None and cfg.model.get("tune_grid"):
        decoding, tune_aer = _choose(marg, tune, spans["tune"],
                                     OmegaConf.to_container(cfg.model.tune_grid))
        print(f"decoding chosen on {cfg.data.tune_split} (AER {tune_aer:.4f}): {decoding}")
    metrics = {"train": {"seconds": sample_s, "pairs": len(pairs)}}
    print(f"bayesian aligner: {cfg.data.name}, {len(pairs)} pairs, sweeps per stage "
          f"{marg.schedule} x {model.config.n_samplers} samplers, {sample_s:.1f} s")
    print(f"{'split':<8} {'decoding':<36} {'prec':>6} {'rec':>6} {'AER':>7}")
    for split, g in gold.items():
        links, s = decode_and_score(marg, g, spans[split], decoding)
        metrics[split] = {"aer": s.aer, "precision": s.precision, "recall": s.recall}
        desc = f"{decoding['method']} {decoding['symmetrize']}"
        print(f"{split:<8} {desc:<36} {s.precision:6.4f} {s.recall:6.4f} {s.aer:7.4f}")
        with open(out_dir / f"alignments.{split}.txt", "w", encoding="utf-8") as f:
            f.writelines(link_line(sorted(ls)) + "\n" for ls in links)
    write_metrics_json(out_dir / "metrics.json", metrics)
    save_bayes_aligner(out_dir / "model", model, decoding=decoding)
    if cfg.get("logger"):
        logger = instantiate(cfg.logger)
        logger.log_metrics({f"{sp}/{k}": v for sp, row in metrics.items()
                            for k, v in row.items()})
        logger.save()
    if cfg.get("callbacks"):
        print(f"note: callbacks {sorted(cfg.callbacks)} are unused (Gibbs sampling has no "
              "Lightning loop)")
    return metrics


def evaluate(cfg: DictConfig) -> dict:
    """Score a saved model on cfg.data's eval splits by sampling their text with the saved
    counts as priors: `python evaluate.py experiment=efmaral_wpt_roen ckpt_path=RUN/model`."""
    from aligners.data.datasets import load
    from aligners.export import resolve_model_folder
    from aligners.models.bayesian.io import load_bayes_aligner

    decoding = OmegaConf.to_container(cfg.model.decoding, resolve=True)
    metrics = {}
    folder = resolve_model_folder(cfg.get("ckpt_path"))
    for split in cfg.data.eval_splits:
        saved = load_bayes_aligner(folder)  # fresh priors for every split
        decoding = {**decoding, **saved.decoding}
        g = load(cfg.data.name, split)
        marg = saved.model.align([(p.src, p.tgt) for p in g], seed=int(cfg.seed))
        s = decode_and_score(marg, g, (0, len(g)), decoding)[1]
        metrics[split] = {"aer": s.aer, "precision": s.precision, "recall": s.recall}
        print(f"{split}: AER {s.aer:.4f} (P {s.precision:.4f}, R {s.recall:.4f})")
    if cfg.get("paths") and cfg.paths.get("output_dir"):
        Path(cfg.paths.output_dir).mkdir(parents=True, exist_ok=True)
        write_metrics_json(Path(cfg.paths.output_dir) / "metrics.json", metrics)
    return metrics
