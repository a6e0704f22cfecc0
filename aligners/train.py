"""Train (or run) an experiment: `python -m aligners.train experiment=NAME` (or `aligners train`).

The Hydra configs ship inside the package (`aligners/configs`, a link to the checkout's
top-level `configs/`), so this works from an installed wheel as well as from a checkout;
the top-level `train.py` is a thin wrapper around `main`. `aligners.evaluate` is the same
entry point (`hydra_entry`) on `evaluate.yaml`.
"""

import hydra
from omegaconf import DictConfig

from aligners import launch, run

__all__ = ["CONFIGS", "hydra_entry", "main"]

# an absolute folder: the same whether this runs as `-m`, from a wrapper or from a wheel
CONFIGS = str(launch.CONFIGS)


def hydra_entry(fn, config_name: str):
    """The `main()` that runs `fn(cfg)` (`aligners.run.train` or `evaluate`, under
    `aligners.run.main`) on the Hydra config `config_name` of the command line; the command
    line is checked first (`aligners.launch.launch`). Bad input: one line on stderr, exit 2;
    Ctrl-C: one line, exit 130."""

    def task(cfg: DictConfig) -> None:
        run.main(fn, cfg)

    task.__module__ = f"aligners.{config_name}"  # Hydra names the job (and its .log) after it
    hydra_main = hydra.main(version_base="1.3", config_path=CONFIGS, config_name=config_name)

    def main() -> None:
        launch.launch(hydra_main(task))

    return main


main = hydra_entry(run.train, "train")

if __name__ == "__main__":
    main()
