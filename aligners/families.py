"""The model families: one record each, and every registry derived from the records.

A family is registered once, by its own package: `aligners/models/<pkg>/__init__.py` sets
`FAMILY = Family(...)` (several families: `FAMILIES = (...)`) and stays cheap (no torch).
See docs/DESIGN.md, "Model families" and "Adding a model family".
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from aligners.errors import AlignersInputError

__all__ = ["Family", "families", "family", "by_kind", "by_task", "resolve", "lazy_names"]


@dataclass(frozen=True)
class Family:
    """One model family.

    name: its CLI choice, model kind, Hydra task and config file (`-` written `_` in module
    and YAML names; variants get kinds `<name>-<variant>`); summary: one line for listings;
    verb: the `aligners` subcommand that applies its models ("align", "monoalign", "reorder",
    "classify"); config: "module:Class" of its config dataclass (the one source of its
    defaults and value checks); model: "module:Class" of its aligned-model class (word
    families: `aligners.models.aligned.WordAlignment`), or None; loader: "module:attr"
    taking an `aligners.export.ModelFolder` and returning the ready model (default: the
    model class's `from_folder`); kinds: the kinds its folders are written with (default:
    the name alone), read_kinds: older kinds still read; task: the Hydra task name
    (default: the name); paper: where it comes from; order: listing order; evaluates: its
    task's `evaluate` scores a saved model (`ckpt_path`); sections: the task config's
    sections ("model", "data", ...; "" = top-level keys) -> "module:Class" of the dataclass
    whose fields' `setting` rules check them (`aligners.config_checks.check`); a
    `TASK_SECTIONS` dict in the family's config module wins over them.
    """

    name: str
    summary: str
    verb: str
    config: str | None = None
    model: str | None = None
    loader: str | None = None
    kinds: tuple[str, ...] = ()
    read_kinds: tuple[str, ...] = ()
    task: str | None = None
    paper: str = ""
    order: int = 100  # listing order (word families: the recommended first)
    evaluates: bool = True  # False: its Hydra task trains and tests in one run (no ckpt_path)
    sections: dict[str, str] = field(default_factory=dict)  # config section -> dataclass

    @property
    def kind(self) -> str:
        """The kind a new model folder of this family is written with."""
        return self.kinds[0] if self.kinds else self.name

    @property
    def all_kinds(self) -> tuple[str, ...]:
        """Every kind `aligners.load` reads as this family's."""
        return (*(self.kinds or (self.name,)), *self.read_kinds)

    @property
    def task_name(self) -> str:
        return self.task or self.name

    def config_class(self):
        return None if self.config is None else resolve(self.config)

    def model_class(self):
        if self.model is None:
            raise AlignersInputError(f"family {self.name!r} has no aligned-model class")
        return resolve(self.model)

    def load(self, folder):
        """The ready model of a read `ModelFolder` of this family."""
        target = self.loader or f"{self.model}.from_folder"
        return resolve(target)(folder)


def resolve(target: str) -> Any:
    """`"package.module:attr.sub"` -> the object (imported on demand)."""
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def lazy_names(package: str, names: dict[str, str]):
    """A module `__getattr__` for a family package: each of `names` (name -> submodule) is
    imported on first use, so that the package (and its FAMILY record) stays cheap."""
    def __getattr__(name: str):
        if name in names:
            return getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__


@cache
def _registered() -> tuple[Family, ...]:
    import aligners.models as models

    found: list[Family] = []
    for info in sorted(pkgutil.iter_modules(models.__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        pkg = importlib.import_module(f"aligners.models.{info.name}")
        one = getattr(pkg, "FAMILY", None)
        found.extend([one] if one is not None else getattr(pkg, "FAMILIES", ()))
    names, kinds = set(), set()
    for f in found:
        if f.name in names:
            raise RuntimeError(f"two families are named {f.name!r}")
        clash = kinds & set(f.all_kinds)
        if clash:
            raise RuntimeError(f"model kinds registered twice: {sorted(clash)}")
        names.add(f.name)
        kinds |= set(f.all_kinds)
    return tuple(sorted(found, key=lambda f: (f.order, f.name)))


def families(verb: str | None = None) -> list[Family]:
    """Every registered family (those of one `verb` when given), in a stable order."""
    return [f for f in _registered() if verb is None or f.verb == verb]


def family(name: str, *, verb: str | None = None) -> Family:
    """The family called `name` (AlignersInputError naming the choices otherwise)."""
    for f in families(verb):
        if f.name == name:
            return f
    names = ", ".join(f.name for f in families(verb))
    raise AlignersInputError(f"unknown model family {name!r}; choose one of {names}")


def by_kind(kind: str) -> Family:
    """The family whose model folders carry `kind`."""
    for f in families():
        if kind in f.all_kinds:
            return f
    known = sorted(k for f in families() for k in f.all_kinds)
    raise AlignersInputError(f"unknown model kind {kind!r}; known: {known}")


def by_task(task: str) -> Family | None:
    """The family that runs Hydra task `task`, or None (a task without a family)."""
    return next((f for f in families() if f.task_name == task), None)


class _CallableModule(type(importlib)):
    """This module, callable as `families()`: importing `aligners.families` (as `aligners.load`
    and `aligners.align` do) makes `aligners.families` this module, and the public
    `aligners.families()` must keep working."""

    def __call__(self, verb: str | None = None) -> list[Family]:
        return families(verb)


sys.modules[__name__].__class__ = _CallableModule
