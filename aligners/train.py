"""Train (or run) an experiment: `python -m aligners.train experiment=NAME` (or `aligners train`).

The Hydra configs ship inside the package (`aligners/configs`, a link to the checkout's
top-level `configs/`), so this works from an installed wheel as well as from a checkout;
the top-level `train.py` is a thin wrapper around `main`.
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

from aligners.run import main as run_main
from aligners.run import train

__all__ = ["CONFIGS", "main"]

# an absolute folder: the same whether this runs as `-m`, from a wrapper or from a wheel
CONFIGS = str(Path(__file__).resolve().parent / "configs")


@hydra.main(version_base="1.3", config_path=CONFIGS, config_name="train")
def main(cfg: DictConfig) -> None:
    """Run `aligners.run.train(cfg)`; bad input: one line on stderr, exit 2."""
    run_main(train, cfg)


if __name__ == "__main__":
    main()
