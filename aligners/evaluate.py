"""Evaluate a trained model: `python -m aligners.evaluate experiment=NAME ckpt_path=MODEL`
(or `aligners evaluate-run ...`): `aligners.run.evaluate` on `configs/evaluate.yaml`, through
the entry point of `aligners.train`; the top-level `evaluate.py` is a thin wrapper around `main`.
"""

from aligners.run import evaluate
from aligners.train import CONFIGS, hydra_entry

__all__ = ["CONFIGS", "main"]

main = hydra_entry(evaluate, "evaluate")

if __name__ == "__main__":
    main()
