"""One export format for every model family, and `aligners.load(path)` for inference.

A model folder: `model.safetensors` (every tensor; no pickle), `config.json` (`{"format":
"aligners/1", "kind": KIND, ...}` and the family's JSON hyper-parameters) and the extra
JSON files the family names. Written atomically, mode 0644. `load` dispatches on `kind` to
the family that registered it (`aligners.families`), importing its loader lazily.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from aligners.errors import AlignersInputError
from aligners.outputs import MODEL_FORMAT, model_dir_problem

__all__ = ["FORMAT", "ModelFolder", "write_model", "read_model", "read_config",
           "resolve_model_folder", "load"]

FORMAT = MODEL_FORMAT  # "aligners/1"

@dataclass
class ModelFolder:
    """What `read_model` returns: the folder, its config, its tensors and its extra JSON."""

    path: Path
    kind: str
    config: dict[str, Any]
    tensors: dict[str, torch.Tensor]

    def tensor(self, name: str) -> torch.Tensor:
        """The tensor `name`, or AlignersInputError naming the folder when it is missing."""
        if name not in self.tensors:
            raise AlignersInputError(f"model.safetensors has no tensor {name!r}",
                                     path=str(self.path))
        return self.tensors[name]

    def json(self, stem: str) -> Any:
        """The extra file `<stem>.json` written by `write_model(..., extras=)`."""
        f = self.path / f"{stem}.json"
        if not f.is_file():
            raise AlignersInputError(f"not a saved model: {f.name} is missing",
                                     path=str(self.path))
        return _read_json(f)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AlignersInputError(f"{path.name} is not valid JSON ({err})",
                                 path=str(path)) from None


def _write_json(path: Path, obj: Any, *, indent: int | None = 1) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=indent) + "\n", encoding="utf-8")
    os.chmod(path, 0o644)


def write_model(
    folder: str | Path,
    *,
    kind: str,
    tensors: dict[str, torch.Tensor],
    config: dict[str, Any],
    extras: dict[str, Any] | None = None,
) -> Path:
    """Write the model folder `folder` atomically and return it.

    `tensors`: name -> tensor (saved on CPU, contiguous); `config`: plain JSON (`format` and
    `kind` are added); `extras`: stem -> JSON value (`<stem>.json`). An existing destination is
    replaced only when empty or a model folder of ours (else AlignersInputError), by two renames
    with SIGINT held; a symbolic link keeps pointing at its (new) target.
    """
    from safetensors.torch import save_file

    if "format" in config or "kind" in config:
        raise ValueError("config may not set 'format' or 'kind'; pass kind=")
    dest = Path(os.path.realpath(folder))
    problem = model_dir_problem(dest)
    if problem is not None:
        raise AlignersInputError(f"{problem}; not replaced by the model", path=str(folder))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        os.chmod(tmp, 0o755)
        weights = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
        save_file(weights, str(tmp / "model.safetensors"))
        os.chmod(tmp / "model.safetensors", 0o644)
        _write_json(tmp / "config.json", {"format": FORMAT, "kind": kind, **config})
        for stem, value in (extras or {}).items():
            _write_json(tmp / f"{stem}.json", value, indent=None)  # tables: one line, compact
        _swap_in(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Path(folder)


def _swap_in(new: Path, dest: Path) -> None:
    """Rename the complete folder `new` to `dest`; an existing `dest` is first moved to a
    fresh hidden name beside it (never a fixed name that could be someone's folder) and
    removed once `new` is in place, or put back if that rename fails. SIGINT is held
    meanwhile (a model folder is a few files: this is quick)."""
    held = hasattr(signal, "pthread_sigmask")
    if held:
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    old = None
    try:
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
            dest.rename(old)  # onto the empty folder just made: atomic
        try:
            new.rename(dest)
        except BaseException:
            if old is not None:
                old.rename(dest)
                old = None
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def resolve_model_folder(path) -> Path:
    """The model folder that `path` names: the folder itself (holding config.json), a file
    inside it, or a run folder holding `model/` (or a file inside the run, such as
    `checkpoints/last.ckpt`). This is what `ckpt_path=` means for every task.
    Raises AlignersInputError otherwise."""
    if path is None or str(path) in ("", "None", "null"):
        raise AlignersInputError("ckpt_path is required: the model folder of a training run "
                                 "(e.g. ckpt_path=outputs/EXPERIMENT/RUN/model)")
    p = Path(str(path)).expanduser()
    if not p.exists():
        raise AlignersInputError("ckpt_path does not exist; expected a model folder written "
                                 "by a training run, or a file inside it", path=str(p))
    start = p if p.is_dir() else p.parent
    for folder in [start, *start.parents][:3]:
        for cand in (folder, folder / "model"):
            if (cand / "config.json").is_file():
                return cand
    raise AlignersInputError("not a model folder (no config.json in it or in <run>/model)",
                             path=str(p))


def read_config(folder: str | Path, *, files: tuple[str, ...] = ("config.json",)
                ) -> dict[str, Any]:
    """The format-checked `config.json` of a model folder (tensors are not read), after
    checking that the folder holds each of `files`."""
    if not Path(folder).is_dir():
        raise AlignersInputError("no model folder here (expected a folder written by "
                                 "`--save-model` or a training run)", path=str(folder))
    for name in files:
        if not (Path(folder) / name).is_file():
            raise AlignersInputError(f"not a saved model: {name} is missing", path=str(folder))
    cfg_path = Path(folder) / "config.json"
    config = _read_json(cfg_path)
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        found = config.get("format") if isinstance(config, dict) else None
        raise AlignersInputError(f"expected format {FORMAT!r}, found {found!r}",
                                 path=str(cfg_path))
    return config


def read_model(folder: str | Path, *, kind: str | None = None) -> ModelFolder:
    """Read a folder written by `write_model`; check its format and, if given, its kind.

    Raises AlignersInputError (naming the file) when the folder or a file is missing,
    unreadable, of another format or of another kind.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(folder)
    config = read_config(path, files=("config.json", "model.safetensors"))
    weights = path / "model.safetensors"
    if kind is not None and config.get("kind") != kind:
        raise AlignersInputError(f"model kind {config.get('kind')!r}, expected {kind!r}",
                                 path=str(path / "config.json"))
    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as err:
        raise AlignersInputError(f"unreadable safetensors file ({err})",
                                 path=str(weights)) from None
    return ModelFolder(path=path, kind=config["kind"], config=config, tensors=tensors)


def load(path: str | Path, *, verb: str | None = None):
    """A ready model for inference from a model folder, whatever its family.

    Dispatches on the folder's `kind` to its family's loader (`aligners.families.by_kind`);
    `verb` (e.g. "reorder"): the family must be one that verb applies. Raises
    AlignersInputError for an unknown kind, a kind of another verb or a bad folder.
    """
    from aligners.families import by_kind, families

    folder = read_model(path)
    try:
        fam = by_kind(folder.kind)
    except AlignersInputError as err:
        raise AlignersInputError(err.reason, path=str(folder.path)) from None
    if verb is not None and fam.verb != verb:
        kinds = sorted(k for f in families(verb) for k in f.all_kinds)
        raise AlignersInputError(f"model kind {folder.kind!r} is not for `aligners {verb}` "
                                 f"(expected one of {kinds})", path=str(folder.path))
    return fam.load(folder)
