"""Train (or run) an experiment: `python -m aligners.train experiment=NAME` (or `aligners train`).

The Hydra configs ship inside the package (`aligners/configs`, a link to the checkout's
top-level `configs/`), so this works from an installed wheel as well as from a checkout;
the top-level `train.py` is a thin wrapper around `main`.
"""

import hydra
from omegaconf import DictConfig

from aligners import launch as _launch
from aligners.run import main as run_main
from aligners.run import train

__all__ = ["CONFIGS", "main"]

# an absolute folder: the same whether this runs as `-m`, from a wrapper or from a wheel
CONFIGS = str(_launch.CONFIGS)


@hydra.main(version_base="1.3", config_path=CONFIGS, config_name="train")
def _hydra_main(cfg: DictConfig) -> None:
    run_main(train, cfg)


def main() -> None:
    """Run `aligners.run.train(cfg)` on the Hydra config of the command line; the command
    line is checked first (`aligners.launch.launch`). Bad input: one line on stderr, exit 2;
    Ctrl-C: one line, exit 130."""
    _launch.launch(_hydra_main)


if __name__ == "__main__":
    main()
