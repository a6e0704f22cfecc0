"""Plain entry points behind `train.py` / `evaluate.py` (thin @hydra.main wrappers).

`cfg.task` names what to run; each task lives in `aligners.training.<module>` and exposes
`train(cfg) -> dict` and `evaluate(cfg) -> dict` (the metrics it printed and wrote to
`metrics.json` in `cfg.paths.output_dir`). The tasks are the model families' (one task per
family, `aligners.families`: its `evaluate` accepts the family's model kinds) plus
"baseline", the diagonal aligner scored on a gold set (no model to load).

The contract of `evaluate(cfg)`, the same for every task: `cfg.ckpt_path` is a model
folder written by the task (or a file inside it); a task with `ENSEMBLES = True` also takes a
list of them (`ckpt_path=[A,B]`: their ensemble). Before a task runs, `check(cfg)`
validates the config once (`aligners.config_checks`), `ckpt_path` and `data.test_path`;
every failure is one `AlignersInputError` line, which `main(fn, cfg)` (what the Hydra
wrappers call) prints. The command line is checked before Hydra starts by `aligners.launch`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from aligners.errors import AlignersInputError

__all__ = ["tasks", "train", "evaluate", "check", "main", "register_schemas"]

BASELINE = "baseline"  # diagonal aligner scored on a gold test set (the default job)


def tasks() -> dict[str, str]:
    """task name -> module under aligners.training (the name, `-` written `_`): every
    family's task, and the baseline."""
    from aligners.families import families

    return {BASELINE: BASELINE, **{f.task_name: f.task_name.replace("-", "_") for f in families()}}


# `${pid:}` in hydra.run.dir: two runs started in the same microsecond still differ
if not OmegaConf.has_resolver("pid"):
    OmegaConf.register_new_resolver("pid", os.getpid)


def register_schemas() -> None:
    """The defaults of each task's `model` and `data` dataclasses in Hydra's ConfigStore as
    the configs `model/<task>_schema`, `data/<task>_schema` (`-` written `_`), before
    anything composes: a file of configs/model/ or configs/data/ extends one
    (`defaults: [<task>_schema, _self_]`) and holds only what it changes. The node is plain
    (untyped): values are checked once, by `aligners.config_checks.check` (one line)."""
    from hydra.core.config_store import ConfigStore

    from aligners.config_checks import defaults_of, task_configs
    from aligners.families import resolve

    for task, sections in task_configs().items():
        for group in ("model", "data"):
            if group in sections:
                ConfigStore.instance().store(group=group, name=f"{task.replace('-', '_')}_schema",
                                             node=defaults_of(resolve(sections[group])))


register_schemas()


def _check_ckpt(cfg: DictConfig, module, *, evaluating: bool) -> None:
    """`ckpt_path` names a model folder (`export.resolve_model_folder`) whose config.json is
    readable and of a kind of the task's family (none for the baseline)."""
    from aligners.export import read_config, resolve_model_folder
    from aligners.families import by_task

    ckpt, fam = cfg.get("ckpt_path"), by_task(cfg.task)
    kinds = fam.all_kinds if fam is not None and fam.evaluates else ()
    if ckpt in (None, "") and (not evaluating or not kinds):
        return
    if not kinds:
        raise AlignersInputError(f"task {cfg.task!r} has no model to load; drop ckpt_path "
                                 f"(got {ckpt})")
    if ckpt in (None, ""):
        raise AlignersInputError(
            "ckpt_path is required: evaluate needs ckpt_path=MODEL, a model folder written by "
            f"task {cfg.task!r} (python train.py experiment=...), or a file inside it")
    many = OmegaConf.is_list(ckpt) or isinstance(ckpt, (list, tuple))  # an ensemble
    if many:
        if not getattr(module, "ENSEMBLES", False):
            raise AlignersInputError(f"task {cfg.task!r} evaluates one model: give one "
                                     f"ckpt_path, not a list")
        if len(ckpt) < 2:
            raise AlignersInputError("a list ckpt_path ensembles two or more model folders, "
                                     f"got {len(ckpt)}")
    for one in (ckpt if many else [ckpt]):
        folder = resolve_model_folder(one)
        kind = read_config(folder).get("kind")
        if kind not in kinds:
            raise AlignersInputError(f"model kind {kind!r} cannot be evaluated by task "
                                     f"{cfg.task!r} (expected one of {list(kinds)})",
                                     path=str(folder / "config.json"))


def _check_test_path(cfg: DictConfig) -> None:
    data = cfg.get("data") or {}
    test_path = data.get("test_path") if hasattr(data, "get") else None
    if test_path in (None, ""):
        return
    p = Path(str(test_path)).expanduser()
    root = (cfg.get("paths") or {}).get("data_root")
    if p.exists() or (root and (Path(str(root)) / p).exists()):
        return
    raise AlignersInputError("no such test file (data.test_path)", path=str(p))


def check(cfg: DictConfig, *, evaluating: bool = False):
    """Validate `cfg` once (rules, ckpt_path, data.test_path); return the task module."""
    from aligners.config_checks import check_config

    name, known = cfg.get("task"), tasks()
    if name not in known:
        raise AlignersInputError(f"unknown task {name!r}; choose one of {sorted(known)}")
    module = importlib.import_module(f"aligners.training.{known[name]}")
    check_config(cfg, cfg.task)
    _check_trainer(cfg)
    if evaluating or cfg.get("ckpt_path"):
        _check_ckpt(cfg, module, evaluating=evaluating)
    _check_test_path(cfg)
    return module


def _check_trainer(cfg: DictConfig) -> None:
    """`trainer=gpu` (accelerator gpu/cuda) where torch sees no GPU: one line, before work."""
    acc = str((cfg.get("trainer") or {}).get("accelerator", "cpu"))
    if acc in ("gpu", "cuda"):
        import torch

        if not torch.cuda.is_available():
            raise AlignersInputError(f"trainer.accelerator={acc}: torch sees no CUDA GPU "
                                     "here; run on the CPU with trainer=cpu")


def _run(cfg: DictConfig, *, evaluating: bool) -> dict:
    """Check `cfg` and run its task's `train` or `evaluate`; `paths.data_root`, when a
    config sets it, is the data folder of the run."""
    from aligners.data.paths import data_root_set_to
    from aligners.training.quiet import quiet_runs

    quiet_runs()  # no Lightning tips/banners or known non-applicable warnings (one place)
    with data_root_set_to((cfg.get("paths") or {}).get("data_root")):
        module = check(cfg, evaluating=evaluating)
        return module.evaluate(cfg) if evaluating else module.train(cfg)


def train(cfg: DictConfig) -> dict:
    """Run `cfg.task`'s training job (Hydra's output dir is `cfg.paths.output_dir`)."""
    metrics = _run(cfg, evaluating=False)
    _plot(cfg)
    return metrics


def _plot(cfg: DictConfig) -> None:
    """The run's training curves as PNGs beside metrics.json (`aligners.plots`)."""
    from aligners.plots import plot_training_curves

    out = _output_dir(cfg)
    if out is None or not out.is_dir():
        return
    try:
        for png in plot_training_curves(out):
            print(f"training curves: {png}")
    except Exception as err:  # a picture is never worth the run: say so, keep the results
        print(f"warning: training curves not drawn ({err})", file=sys.stderr)


def evaluate(cfg: DictConfig) -> dict:
    """Run `cfg.task`'s evaluation job on the model `cfg.ckpt_path`."""
    return _run(cfg, evaluating=True)


def _output_dir(cfg: DictConfig) -> Path | None:
    try:
        return Path(str(cfg.paths.output_dir))
    except Exception:  # no Hydra runtime (e.g. called from a test): nothing to clean
        return None


def _missing_extra(err: BaseException) -> str | None:
    """One line for an ImportError (or one caused by it) of a package that an optional
    extra of the `aligners` distribution installs (its metadata, the one list), else None."""
    from importlib import metadata

    try:
        requires = metadata.requires("aligners") or []
    except metadata.PackageNotFoundError:
        requires = []
    extras = {}  # module name -> extra, from "NAME[...]>=V; extra == 'X'"
    for req in requires:
        extra = re.search(r";.*extra ==\s*[\"']?([^\"'\s]*)", req)
        if extra:
            module = re.match(r"\s*([^\s\[<>=!~;]*)", req).group(1)
            extras[module.replace("-", "_").lower()] = extra.group(1)
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        top = (getattr(err, "name", None) or "").split(".")[0].lower()
        if isinstance(err, ImportError) and top in extras:
            extra = extras[top]
            return (f"this experiment needs the {extra!r} extra (no module {top!r}): "
                    f"pip install -e '.[{extra}]' (or pip install 'aligners[{extra}]')")
        err = err.__cause__ or err.__context__
    return None


def _remove_run(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    if out.parent.parent.name in ("outputs", "multirun"):  # Hydra's layout, not the user's
        with contextlib.suppress(OSError):
            out.parent.rmdir()  # the experiment's folder, when this run was its only one


def _sigint_watch() -> list:
    """Install a SIGINT handler that records the interrupt (the returned list becomes
    non-empty) and raises KeyboardInterrupt once; later SIGINTs (a second Ctrl-C, the one
    `aligners train` passes on) are ignored. Lightning turns KeyboardInterrupt into
    `sys.exit(1)`: the record tells an interrupt from a failure."""
    import signal

    hits: list = []

    def on_sigint(signum, _frame):
        if not hits:
            hits.append(signum)
            raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread: leave SIGINT alone
        signal.signal(signal.SIGINT, on_sigint)
    return hits


class _Tee:
    """A text stream that writes to each of `streams` (the first answers everything else)."""

    def __init__(self, *streams):
        self._streams = streams

    def write(self, text: str) -> int:
        for s in self._streams:
            s.write(text)
        return len(text)

    def flush(self) -> None:
        for s in self._streams:
            s.flush()

    def __getattr__(self, name: str):
        return getattr(self._streams[0], name)


@contextlib.contextmanager
def _logged(out: Path):
    """stdout (the run's tables) also into the run's `<job>.log`, which Hydra creates for
    its own logging only; no progress bars when stderr is not a terminal (a redirected log
    would fill with their `\\r` lines)."""
    from hydra.core.hydra_config import HydraConfig

    if not sys.stderr.isatty():
        os.environ["TQDM_DISABLE"] = "1"
    with (open(out / f"{HydraConfig.get().job.name}.log", "a", encoding="utf-8") as log,
          contextlib.redirect_stdout(_Tee(sys.stdout, log))):
        yield


def main(fn, cfg: DictConfig) -> None:
    """Run `fn(cfg)` for a Hydra entry point; every way out is one line on stderr.

    Bad input (`AlignersInputError`, or a package of an optional extra missing): one line,
    exit 2, and the run's output folder removed. Ctrl-C (also when Lightning catches it):
    `NAME: interrupted; run folder marked FAILED: OUT/FAILED`, exit 130. Another
    `ValueError`: one line naming the folder's `FAILED` file, exit 2; any other failure:
    the same, exit 1. `FAILED` holds "interrupted" or the traceback. Without a run folder
    (no Hydra runtime) a failure other than bad input propagates. What the run prints goes
    to its `<job>.log` too (`_logged`)."""
    import signal
    import traceback

    out = _output_dir(cfg)
    name = Path(sys.argv[0]).name or "aligners"
    ran = out is not None and (out / ".hydra").is_dir()
    previous = signal.getsignal(signal.SIGINT)
    interrupted = _sigint_watch()
    try:
        with _logged(out) if ran else contextlib.nullcontext():
            fn(cfg)
    except BaseException as err:
        with contextlib.suppress(ValueError):  # a second Ctrl-C: no half cleanup
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if isinstance(err, SystemExit) and not interrupted:
            raise
        failed = out / "FAILED" if ran else None
        if interrupted or isinstance(err, KeyboardInterrupt):
            if failed is not None:
                failed.write_text("interrupted (Ctrl-C / SIGINT)\n\n" + traceback.format_exc(),
                                  encoding="utf-8")
            where = f"; run folder marked FAILED: {failed}" if failed is not None else ""
            print(f"{name}: interrupted{where}", file=sys.stderr)
            raise SystemExit(130) from None
        message = str(err) if isinstance(err, AlignersInputError) else _missing_extra(err)
        if message is not None:
            print(f"{name}: error: {message}", file=sys.stderr)
            if ran:
                _remove_run(out)
            raise SystemExit(2) from None
        if failed is None:
            if isinstance(err, ValueError):
                print(f"{name}: error: {err}".replace("\n", " "), file=sys.stderr)
                raise SystemExit(2) from None
            raise
        failed.write_text(traceback.format_exc(), encoding="utf-8")
        what = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
        print(f"{name}: error: {what} (traceback in {failed})".replace("\n", " "),
              file=sys.stderr)
        raise SystemExit(2 if isinstance(err, ValueError) else 1) from None
    finally:
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(signal.SIGINT, previous)
