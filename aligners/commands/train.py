"""`aligners train [OVERRIDES...]`: run an experiment, the same as `python train.py` or
`python -m aligners.train` (Hydra overrides, e.g. `experiment=hmm_agreement_hansards_20k`).

    aligners train experiment=diagonal_baseline
    aligners train --list          # the runnable experiments (no base configs)

The experiment runs in a child interpreter (`python -m aligners.train`), so this command
never imports Lightning or the training code itself; its exit status is the child's.
"""

import argparse
import signal
import subprocess
import sys

__all__ = ["add_arguments", "run", "add_overrides", "child"]


def add_overrides(parser: argparse.ArgumentParser, example: str) -> None:
    """The positional Hydra overrides of `train` and `evaluate-run`."""
    parser.add_argument("overrides", nargs=argparse.REMAINDER, metavar="OVERRIDE",
                        help=f"Hydra overrides, {example}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true",
                        help="print the runnable experiment names and exit")
    add_overrides(parser, "e.g. experiment=NAME seed=1 (`-- --help` shows Hydra's help)")


def run(args: argparse.Namespace) -> int:
    if args.list:  # base configs such as yao2013_common, which select no data set, left out
        from aligners.launch import experiments
        from aligners.outputs import write_lines

        write_lines("-", experiments())
        return 0
    return child("aligners.train", args.overrides)


def child(entry: str, overrides: list[str]) -> int:
    """Run `python -m ENTRY OVERRIDES...` (a leading `--` dropped) and return its exit
    status. Ctrl-C: the child (which marks its run folder FAILED and prints the one line) is
    sent SIGINT too, in case only this process got it, and is waited for; a second Ctrl-C
    here is ignored."""
    if overrides[:1] == ["--"]:
        overrides = overrides[1:]
    proc = subprocess.Popen([sys.executable, "-m", entry, *overrides])
    try:
        return proc.wait()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # the child ignores a second one
        return proc.wait()
