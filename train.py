"""Train (or run) the experiment selected by Hydra: `python train.py experiment=NAME`.

A thin wrapper: the entry point is `aligners.train` (also `python -m aligners.train` or
`aligners train`); the configs are `configs/` (shipped in the package as `aligners/configs`).
"""

from aligners.train import main

if __name__ == "__main__":
    main()
