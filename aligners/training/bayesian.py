"""Task `bayesian`: the Bayesian word aligner's Hydra task (`word_task.WordTask`: collapsed
Gibbs, Östling & Tiedemann 2016): `python train.py experiment=efmaral_wpt_roen`.

Training and alignment are one sampling pass over the task's text, so each gold split's
links are read off that pass (`part`: its span of the sampled text), never sampled again.
Sampling is not a Lightning loop: cfg.trainer must be a 1-device CPU trainer (the exact
sampler is CPU code; anything else is refused), cfg.logger receives the metrics, and
callbacks (checkpointing, progress bars) have no loop to attach to: a non-empty
cfg.callbacks is reported on stdout as unused. `evaluate` samples each eval split's text
with the saved counts as priors.
"""

from __future__ import annotations

from omegaconf import DictConfig

from aligners.models.bayesian.folder import BayesAligned
from aligners.training.word_task import Fitted, Text, WordTask

__all__ = ["BayesTask", "train", "evaluate"]


def _check_trainer(cfg: DictConfig) -> None:
    t = cfg.get("trainer") or {}
    acc, dev = str(t.get("accelerator", "cpu")), t.get("devices", 1)
    if acc not in ("cpu", "auto") or dev not in (1, "1", "auto"):
        raise ValueError(f"task bayesian samples on one CPU process; trainer "
                         f"accelerator={acc!r} devices={dev!r} is not supported "
                         "(use trainer=cpu)")


class BayesTask(WordTask):
    """The bayesian family's hooks: the trainer check, the splits read off the sampled
    text, the metrics sent to cfg.logger."""

    name = "bayesian"

    def fit(self, cfg: DictConfig, text: Text, run) -> Fitted:
        _check_trainer(cfg)
        fitted = super().fit(cfg, text, run)
        marg = fitted.aligned.marginals
        fitted.rows["train"]["pairs"] = marg.corpus.n_sentences
        print(f"bayesian aligner: {cfg.data.name}, {marg.corpus.n_sentences} pairs, sweeps "
              f"per stage {marg.schedule} x {fitted.model.model.config.n_samplers} samplers, "
              f"{fitted.rows['train']['seconds']:.1f} s")
        return fitted

    def part(self, fitted: Fitted, text: Text, split: str, run):
        marg = fitted.aligned.marginals
        return BayesAligned(marg, text.span(split, marg.corpus.n_sentences))

    def finish(self, cfg: DictConfig, metrics: dict) -> None:
        from hydra.utils import instantiate

        if cfg.get("logger"):
            logger = instantiate(cfg.logger)
            logger.log_metrics({f"{sp}/{k}": v for sp, row in metrics.items()
                                for k, v in row.items()})
            logger.save()
        if cfg.get("callbacks"):
            print(f"note: callbacks {sorted(cfg.callbacks)} are unused (Gibbs sampling has "
                  "no Lightning loop)")


TASK = BayesTask()
train, evaluate = TASK.train, TASK.evaluate
