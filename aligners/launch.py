"""The command line of the Hydra entry points (`train.py`, `evaluate.py`), checked before
Hydra starts: `launch(hydra_main)` runs a wrapper after `check_argv`, so that an unknown or
base experiment, a setting given twice, a run folder that cannot be created or that holds
an earlier run (replaced only with `overwrite=true`), and Hydra's own errors (a bad
override, an unknown group or key) are each one line on stderr, exit 2.
`experiments()` lists the runnable experiments.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from aligners.errors import AlignersInputError

__all__ = ["CONFIGS", "experiments", "check_argv", "launch"]

# the package's Hydra configs (a link to the checkout's configs/; shipped in the wheel)
CONFIGS = Path(__file__).resolve().parent / "configs"


def _experiment_doc(name: str) -> dict:
    import yaml

    f = CONFIGS / "experiment" / f"{name}.yaml"
    doc = yaml.safe_load(f.read_text(encoding="utf-8")) if f.is_file() else None
    return doc if isinstance(doc, dict) else {}


def _selects_data(name: str, seen: frozenset = frozenset()) -> bool:
    """Whether experiment `name` selects a data set: `override /data: NAME` (or a `data:`
    mapping) in it or in an experiment it includes (its bare-name defaults)."""
    if name in seen:
        return False
    doc = _experiment_doc(name)
    if isinstance(doc.get("data"), dict):
        return True
    for item in doc.get("defaults") or []:
        if isinstance(item, dict):
            if any(k.split()[-1].strip("/") == "data" and v for k, v in item.items()):
                return True
        elif isinstance(item, str) and item != "_self_":
            if _selects_data(item, seen | {name}):
                return True
    return False


def experiments(*, runnable: bool = True) -> list[str]:
    """The shipped experiment names (configs/experiment/*.yaml), sorted. With `runnable`
    (default), only those that select a data set (`_selects_data`): a base config such as
    `yao2013_common` or `neural_common` holds settings that runnable experiments include and
    cannot run on its own. Cost: one YAML read per file."""
    names = sorted(p.stem for p in (CONFIGS / "experiment").glob("*.yaml"))
    return [n for n in names if _selects_data(n)] if runnable else names


def _check_experiment(value: str) -> None:
    import re

    if not re.fullmatch(r"[\w./-]+(,[\w./-]+)*", value) or value == "null":
        return  # a sweep function or an interpolation: Hydra checks it
    runnable = experiments()
    for name in value.split(","):
        if name in runnable:
            continue
        if name in experiments(runnable=False):
            users = [n for n in runnable if name in (_experiment_doc(n).get("defaults") or [])]
            raise AlignersInputError(
                f"experiment {name!r} is a base config (settings that runnable experiments "
                f"include; it selects no data set): run one of those"
                + (f", e.g. {', '.join(users[:3])}" if users else "")
                + " (`aligners train --list`)")
        raise AlignersInputError(f"no experiment {name!r}; `aligners train --list` names the "
                                 f"{len(runnable)} runnable ones (e.g. default, "
                                 "diagonal_baseline)")


def _check_run_dir(key: str, value: str, overwrite: bool) -> None:
    """The run folder must be creatable and never mixed: an existing folder that is not
    empty is refused; with `overwrite=true` an earlier run's folder (it holds `.hydra/`) is
    removed first, anything else is refused still."""
    from aligners.outputs import check_folder_path

    static = value.split("${")[0]
    if not static.strip():
        return
    p = Path(static).expanduser()
    if static == value and p.is_dir() and any(p.iterdir()):
        if not (p / ".hydra").is_dir():
            raise AlignersInputError(f"{key}: is a folder that is not empty and not a run "
                                     "folder; expected a new or empty folder", path=value)
        if not overwrite:
            raise AlignersInputError(f"{key}: holds an earlier run; give a new folder, or "
                                     "overwrite=true to replace that run", path=value)
        if Path.cwd().resolve().is_relative_to(p.resolve()):
            raise AlignersInputError(f"{key}: is the current folder (or holds it); give "
                                     "another folder to replace", path=value)
        shutil.rmtree(p)
    check_folder_path(static, flag=key)


def check_argv(argv: list[str]) -> None:
    """Check the overrides that Hydra would turn into many lines or a traceback, or that
    would be silently ignored, before it starts: `experiment=` must name a runnable
    experiment (`experiments()`); `trainer.max_epochs=` is refused (no task reads it: each
    sets the epochs from its own settings); the run folder (`hydra.run.dir`,
    `hydra.sweep.dir` with -m; default `outputs/` here) must be creatable. Raises
    AlignersInputError (one line)."""
    if any(a in ("-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "-p",
                 "--package", "-sc", "--shell-completion") or a.startswith(("--cfg=", "--info="))
           for a in argv):
        return  # nothing runs
    multirun = "-m" in argv or "--multirun" in argv
    run_key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    # Hydra's default: a new folder under outputs/ (multirun/), never an earlier run's
    run_dir = ("multirun" if multirun else "outputs") + "/${hydra:runtime.choices.experiment}"
    overwrite, seen = False, set()
    for arg in argv:
        key, eq, value = arg.partition("=")
        key = key.lstrip("+~")
        if eq and key in seen:
            raise AlignersInputError(f"{key} is given twice; give each setting once")
        seen.add(key)
        if eq and key == "overwrite":
            overwrite = value.lower() == "true"
        elif eq and key == "experiment":
            _check_experiment(value)
        elif eq and key == "trainer.max_epochs":  # every task sets it: silently ignored
            raise AlignersInputError(
                "trainer.max_epochs is not used: each task sets the trainer's epochs from its "
                "own settings (word: model.ibm1_iterations / model.hmm_iterations; "
                "monolingual: training.epochs; reorder: model.primal.epochs; phrasal: "
                "model.phrasal.iterations); drop it")
        elif eq and key == run_key:
            run_dir = value
    _check_run_dir(run_key, run_dir, overwrite and not multirun)


def launch(hydra_main) -> None:
    """Run the @hydra.main function `hydra_main` (no arguments: Hydra reads sys.argv) after
    `check_argv`; its failure, Hydra's own (a bad override, an unknown group or key), or
    Ctrl-C before `main` takes over, is one line (exit 2 / 130)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    name = Path(sys.argv[0]).name or "aligners"
    full = os.environ.get("HYDRA_FULL_ERROR") == "1"  # the user asked for Hydra's traceback
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises its errors: one line here
    try:
        check_argv(sys.argv[1:])
        hydra_main()
    except (AlignersInputError, HydraException, OmegaConfBaseException) as err:
        if full and not isinstance(err, AlignersInputError):
            raise
        cause = err.__cause__ if isinstance(err.__cause__, OmegaConfBaseException) else None
        text = " ".join(" ".join(str(e).split()) for e in (err, cause) if e is not None)
        print(f"{name}: error: {text}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
