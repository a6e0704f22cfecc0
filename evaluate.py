"""Evaluate a trained model: `python evaluate.py experiment=NAME ckpt_path=...`.

A thin wrapper: the entry point is `aligners.evaluate` (also `python -m aligners.evaluate`
or `aligners evaluate-run`); the configs are `configs/` (shipped as `aligners/configs`).
"""

from aligners.evaluate import main

if __name__ == "__main__":
    main()
