"""Evaluate a trained model: `python evaluate.py experiment=NAME ckpt_path=...`."""

import hydra
from omegaconf import DictConfig

from aligners.run import evaluate


@hydra.main(version_base="1.3", config_path="configs", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    evaluate(cfg)


if __name__ == "__main__":
    main()
