"""`aligners evaluate-run [OVERRIDES...]`: evaluate a trained model on its experiment's test
set, the same as `python evaluate.py` or `python -m aligners.evaluate`.

    aligners evaluate-run experiment=hmm_agreement_hansards_20k ckpt_path=RUN/model

Runs in a child interpreter (`python -m aligners.evaluate`); exit status is the child's.
"""

import argparse

from aligners.commands.train import add_overrides, child

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_overrides(parser, "e.g. experiment=NAME ckpt_path=RUN/model")


def run(args: argparse.Namespace) -> int:
    return child("aligners.evaluate", args.overrides)
