"""`aligners evaluate-run [OVERRIDES...]`: evaluate a trained model on its experiment's test
set, the same as `python evaluate.py` or `python -m aligners.evaluate`.

    aligners evaluate-run experiment=hmm_agreement_hansards_20k ckpt_path=RUN/model

Runs in a child interpreter (`python -m aligners.evaluate`); exit status is the child's.
"""

import argparse

__all__ = ["add_arguments", "run"]

ENTRY = "aligners.evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("overrides", nargs=argparse.REMAINDER, metavar="OVERRIDE",
                        help="Hydra overrides, e.g. experiment=NAME ckpt_path=RUN/model")


def run(args: argparse.Namespace) -> int:
    from aligners.commands.train import child

    overrides = list(args.overrides)
    if overrides[:1] == ["--"]:
        overrides = overrides[1:]
    return child(ENTRY, overrides)
