"""Train (or run) the experiment selected by Hydra: `python train.py experiment=NAME`."""

import hydra
from omegaconf import DictConfig

from aligners.run import main as run_main
from aligners.run import train


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> None:
    run_main(train, cfg)  # bad input: one line on stderr, exit 2


if __name__ == "__main__":
    main()
