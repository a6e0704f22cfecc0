"""Plain entry points behind `train.py` / `evaluate.py` (thin @hydra.main wrappers).

`cfg.task` names what to run; each task lives in `aligners.training.<module>` and exposes
`train(cfg) -> dict` and `evaluate(cfg) -> dict` (the metrics it printed).
"""

import importlib

from omegaconf import DictConfig

__all__ = ["TASKS", "train", "evaluate"]

# task name -> module under aligners.training
TASKS: dict[str, str] = {
    "baseline": "baseline",  # diagonal aligner scored on a gold test set (the default job)
    "word_align": "word_align",
    "monolingual": "monolingual",  # token / semi-Markov phrasal CRF aligners (Yao et al. 2013)
    "reorder": "reorder",
    "bayes_align": "bayes_align",  # Bayesian aligner, collapsed Gibbs (Östling & Tiedemann 2016)
}


def _task_module(cfg: DictConfig):
    name = cfg.get("task")
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return importlib.import_module(f"aligners.training.{TASKS[name]}")


def train(cfg: DictConfig) -> dict:
    """Run `cfg.task`'s training job (Hydra's output dir is `cfg.paths.output_dir`)."""
    return _task_module(cfg).train(cfg)


def evaluate(cfg: DictConfig) -> dict:
    """Run `cfg.task`'s evaluation job."""
    return _task_module(cfg).evaluate(cfg)
