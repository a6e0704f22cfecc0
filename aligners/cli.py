"""The `aligners` command line: `aligners SUBCOMMAND ...` (no Hydra needed for inference).

Each subcommand lives in `aligners/commands/<name>.py` (`add_arguments(parser)`, `run(args)
-> int`), imported lazily. What every subcommand shares is applied here once: the default
shown on every option, `-q/--quiet`, one summary line on stderr after a long command (one
that sets `args.summary`) when stderr is not a terminal, open progress bars closed before an
error, an argument error as one line from the (sub)command it was given to, and one line for
bad input, Ctrl-C, running out of memory and a full stdout (`main`).
"""

import argparse
import contextlib
import importlib
import sys
import time

from aligners import __version__
from aligners.errors import AlignersInputError
from aligners.outputs import flush_stdout

__all__ = ["COMMANDS", "build_parser", "main"]

# name -> (module under aligners.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("evaluate", "score predicted alignments against gold: P/R/AER/F1 (+ breakdowns)"),
    "show": ("show", "look at alignments: grids in the terminal or one HTML page (--html)"),
    "symmetrize": ("symmetrize", "combine forward and reverse alignments (atools heuristics)"),
    "convert": ("convert", "convert alignment notations to Pharaoh (0-based), NAACL, 1-based"),
    "align": ("align", "word-align a bitext (default: Bayesian below 500,000 pairs, HMM "
                       "from there on), Pharaoh output"),
    "reorder": ("reorder", "phrase pairs with orientations; reordering models (train/predict)"),
    "monoalign": ("monoalign", "align monolingual sentence pairs with a trained token/phrase CRF"),
    "classify": ("classify", "paraphrase/entailment/transliteration with a saved LCLR model"),
    "train": ("train", "run an experiment (Hydra overrides), as `python train.py`"),
    "evaluate-run": ("evaluate_run", "evaluate a trained model (Hydra), as `python evaluate.py`"),
}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows `(default: X)` after every option that has a default (not for flags or None),
    unless its help already names the default."""

    def _get_help_string(self, action):
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """An argument error is one line, `PROG: error: MESSAGE (see PROG --help)`, exit 2, as
    every other error (the usage block is what --help is for)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _finish(parser: argparse.ArgumentParser) -> None:
    """Give `parser` (and its nested subcommand parsers) the shared formatter and `--quiet`."""
    parser.formatter_class = HelpFormatter
    nested = _subparsers(parser)
    for child in nested.values():
        _finish(child)
    if not nested and "--quiet" not in parser._option_string_actions:
        parser.add_argument("-q", "--quiet", action="store_true",
                            help="no progress bars and no summary line on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="aligners", description=__doc__.splitlines()[0],
                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=HelpFormatter)
        p.set_defaults(_module=module)
        importlib.import_module(f"aligners.commands.{module}").add_arguments(p)
        if module not in ("train", "evaluate_run"):  # their options go to Hydra
            _finish(p)
    return parser


def _parse(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """parse_args, but an unknown option is reported by the innermost subcommand's parser
    (`aligners reorder extract: error: unrecognized arguments: --bogus`)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = parser
        for key in ("command", "action"):
            owner = _subparsers(owner).get(getattr(args, key, None), owner)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _close_progress() -> None:
    """Close every open tqdm bar (each ends its line), so that what follows starts a line."""
    tqdm_module = sys.modules.get("tqdm")
    if tqdm_module is None:
        return
    for bar in list(getattr(tqdm_module.tqdm, "_instances", ())):
        with contextlib.suppress(Exception):  # a bar on a closed stream: nothing to tidy
            bar.close()


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; its exit status. Bad input (`AlignersInputError`, including an
    unwritable or full stdout/output, `aligners.outputs`): one line, 2. Ctrl-C: one line
    `aligners CMD: interrupted`, 130 (the atomic writers leave no partial output or model
    folder). A closed pipe (`| head`): 0, silently."""
    command = "aligners"
    try:
        args = _parse(build_parser(), argv)
        command = f"aligners {args.command}"
        module = importlib.import_module(f"aligners.commands.{args._module}")
        start = time.perf_counter()
        status = int(module.run(args) or 0)
        flush_stdout()
    except AlignersInputError as err:
        _close_progress()
        print(f"{command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `aligners align ... | head`
        with contextlib.suppress(BrokenPipeError, AlignersInputError):
            flush_stdout()  # drops what is left, so that the exit prints nothing either
        return 0
    except KeyboardInterrupt:
        _close_progress()
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except (MemoryError, RuntimeError) as err:  # torch's allocator raises RuntimeError
        if isinstance(err, RuntimeError) and "allocate" not in str(err):
            raise
        _close_progress()
        print(f"{command}: error: out of memory ({str(err).splitlines()[0][:200]}); give "
              "shorter or fewer pairs, or lower --max-tokens / --batch-size / --batch-cells",
              file=sys.stderr)
        return 1
    summary = getattr(args, "summary", None)  # set by a command that can run for minutes
    quiet = getattr(args, "quiet", False) or getattr(args, "no_progress", False)
    if (status == 0 and summary and not quiet
            and (not sys.stderr.isatty() or getattr(args, "verbose", False))):
        _close_progress()
        print(f"{command}: {summary} in {time.perf_counter() - start:.1f} s",
              file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
