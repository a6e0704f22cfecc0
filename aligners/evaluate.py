"""Evaluate a trained model: `python -m aligners.evaluate experiment=NAME ckpt_path=MODEL`
(or `aligners evaluate-run ...`).

Uses the configs shipped inside the package (see `aligners.train`); the top-level
`evaluate.py` is a thin wrapper around `main`.
"""

import hydra
from omegaconf import DictConfig

from aligners.launch import launch
from aligners.run import evaluate
from aligners.run import main as run_main
from aligners.train import CONFIGS  # the one absolute configs folder

__all__ = ["CONFIGS", "main"]


@hydra.main(version_base="1.3", config_path=CONFIGS, config_name="evaluate")
def _hydra_main(cfg: DictConfig) -> None:
    run_main(evaluate, cfg)


def main() -> None:
    """Run `aligners.run.evaluate(cfg)` on the Hydra config of the command line, checked
    first (`aligners.launch.launch`); bad input: one line on stderr, exit 2."""
    launch(_hydra_main)


if __name__ == "__main__":
    main()
