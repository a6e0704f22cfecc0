"""Train (or run) the experiment selected by Hydra: `python train.py experiment=NAME`."""

import hydra
from omegaconf import DictConfig

from aligners.run import train


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> None:
    train(cfg)


if __name__ == "__main__":
    main()
