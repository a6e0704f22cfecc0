"""Evaluate a trained model: `python evaluate.py experiment=NAME ckpt_path=...`."""

import hydra
from omegaconf import DictConfig

from aligners.run import evaluate
from aligners.run import main as run_main


@hydra.main(version_base="1.3", config_path="configs", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    run_main(evaluate, cfg)  # bad input: one line on stderr, exit 2


if __name__ == "__main__":
    main()
