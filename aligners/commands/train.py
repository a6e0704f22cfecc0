"""`aligners train [OVERRIDES...]`: run an experiment, the same as `python train.py` or
`python -m aligners.train` (Hydra overrides, e.g. `experiment=hmm_agreement_hansards_20k`).

    aligners train experiment=diagonal_baseline
    aligners train --list          # the shipped experiments

The experiment runs in a child interpreter (`python -m aligners.train`), so this command
never imports Lightning or the training code itself; its exit status is the child's.
"""

import argparse
import subprocess
import sys
from pathlib import Path

__all__ = ["add_arguments", "run", "experiments"]

ENTRY = "aligners.train"


def experiments() -> list[str]:
    """The experiment names shipped in the package's configs (configs/experiment/*.yaml)."""
    folder = Path(__file__).resolve().parents[1] / "configs" / "experiment"
    return sorted(p.stem for p in folder.glob("*.yaml"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true",
                        help="print the shipped experiment names and exit")
    parser.add_argument("overrides", nargs=argparse.REMAINDER, metavar="OVERRIDE",
                        help="Hydra overrides, e.g. experiment=NAME seed=1 "
                             "(`-- --help` shows Hydra's help)")


def run(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(experiments()))
        return 0
    overrides = list(args.overrides)
    if overrides[:1] == ["--"]:
        overrides = overrides[1:]
    return subprocess.call([sys.executable, "-m", ENTRY, *overrides])
