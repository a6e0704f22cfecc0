"""The `aligners` command line: `aligners SUBCOMMAND ...` (no Hydra needed for inference).

Each subcommand lives in `aligners/commands/<name>.py` and exposes
`add_arguments(parser)` and `run(args) -> int`. Modules are imported lazily so that
`aligners evaluate` does not pay for importing torch.
"""

import argparse
import importlib
import sys

from aligners.errors import AlignersInputError

__all__ = ["COMMANDS", "build_parser", "main"]

# name -> (module under aligners.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("evaluate", "score predicted alignments against gold: P/R/AER/F1 (+ breakdowns)"),
    "symmetrize": ("symmetrize", "combine forward and reverse alignments (atools heuristics)"),
    "convert": ("convert", "convert alignment notations to Pharaoh (0-based), NAACL, 1-based"),
    "align": ("align", "word-align a bitext (IBM1 -> HMM by agreement), Pharaoh output"),
    "reorder": ("reorder", "phrase pairs with orientations; reordering models (train/predict)"),
    "monoalign": ("monoalign", "align monolingual sentence pairs with a trained token/phrase CRF"),
    "train": ("train", "run an experiment (Hydra overrides), as `python train.py`"),
    "evaluate-run": ("evaluate_run", "evaluate a trained model (Hydra), as `python evaluate.py`"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aligners", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module)
        importlib.import_module(f"aligners.commands.{module}").add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    module = importlib.import_module(f"aligners.commands.{args._module}")
    try:
        return int(module.run(args) or 0)
    except AlignersInputError as err:
        print(f"aligners {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `aligners align ... | head`
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
