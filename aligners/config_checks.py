"""Config and option validation, once: the rules live with the config dataclasses.

A config dataclass (e.g. `aligners.models.reorder.config.ReorderConfig`) is the one source of
its section's defaults and value checks: its class attribute `RULES` maps a field to a `Rule`,
and a field whose default is a dataclass (`field(default_factory=Sub)`) is a nested section
with its own `RULES`. `task_configs()` maps a task to its sections (`"model"`, `"data"`,
`"training"`; `""` = top-level keys) and each section to its dataclass ("module:Class",
imported on use, so that this module imports no model). `RULES` is the older table of task
keys that no dataclass declares yet (`"*"`: every task).

`check_config(cfg, task)` checks every key of `RULES["*"]`, `RULES[task]` and the task's
dataclass rules that the config sets (dotted paths; a missing key is not checked) and raises
`AlignersInputError` with one line, e.g. `model.p0 must be a number in [0, 1); got 5`.
`aligners/run.py` calls it before every task. `from_config(cls, node, where)` builds a
section's dataclass (defaults for what the node does not set, unknown keys refused); CLI
commands call `check_options(args, {dest: rule})` with the dataclass's rules
(`rules_of(cls)`), so a bad value reads the same from both, e.g. `--sigma2 must be a number
> 0; got -1.0`. Cost: O(number of rules).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any

from aligners.cli_types import MAX_ITERATIONS
from aligners.errors import AlignersInputError

__all__ = ["MAX_ITERATIONS", "Rule", "RULES", "task_configs", "check_value", "check_config",
           "check_options", "config_class", "rules_of", "from_config"]


@dataclass(frozen=True)
class Rule:
    """`kind` "int" | "float" | "bool" | "str"; bounds `lo`/`hi` (open when `lo_open` /
    `hi_open`); `nullable`: null allowed; `choices`: allowed values; `each`: the value is a
    list whose every item obeys the rule (`nonempty`: and that holds one at least);
    `listable`: one value or such a list."""

    kind: str = "float"
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    choices: tuple = ()
    each: bool = False
    listable: bool = False
    nonempty: bool = False

    def describe(self) -> str:
        what = {"int": "an integer", "float": "a number", "bool": "true or false",
                "str": "a string"}[self.kind]
        if self.choices:
            what = f"one of {', '.join(map(str, self.choices))}"
        elif self.lo is not None and self.hi is not None:
            what += (f" in {'(' if self.lo_open else '['}{_num(self.lo)}, "
                     f"{_num(self.hi)}{')' if self.hi_open else ']'}")
        elif self.lo is not None:
            what += f" {'>' if self.lo_open else '>='} {_num(self.lo)}"
        elif self.hi is not None:
            what += f" {'<' if self.hi_open else '<='} {_num(self.hi)}"
        what += " or null" if self.nullable else ""
        if self.listable:
            return f"{what}, or a list of such values"
        some = "a non-empty list" if self.nonempty else "a list"
        return f"{some} whose items are each {what}" if self.each else what


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _int(lo=None, **kw) -> Rule:
    return Rule("int", lo=lo, **kw)


def _iterations(**kw) -> Rule:  # an iteration count, bounded (cli_types.MAX_ITERATIONS)
    return Rule("int", lo=0, hi=MAX_ITERATIONS, **kw)


def _pos(**kw) -> Rule:
    return Rule("float", lo=0, lo_open=True, **kw)


def _frac(**kw) -> Rule:  # [0, 1)
    return Rule("float", lo=0, hi=1, hi_open=True, **kw)


# task -> {dotted key: rule}; "*" applies to every task
RULES: dict[str, dict[str, Rule]] = {
    "*": {
        "seed": _int(),
        "threads": _int(1),
        "data.train_limit": _int(1, nullable=True),  # first N pairs; null: all (not 0)
        "data.test_limit": _int(1, nullable=True),
    },
    # The word and phrasal families' rules wait here until their config dataclasses
    # (models/hmm/config.py, models/gappy_hsmm) declare them as the others do (task_configs());
    # PhrasalConfig's own __post_init__ checks remain for direct use.
    "gappy-hsmm": {
        "model.batch_cells": _int(1),
        "model.dev_from_test": _int(0),
        **{f"model.{s}.{k}": r for s in ("word", "start") for k, r in (
            ("ibm1_iterations", _iterations(nullable=True)),
            ("hmm_iterations", _iterations(nullable=True)), ("p0", _frac()),
            ("max_jump", _int(1)), ("lattice", Rule("str", choices=("och_ney", "generic"))))},
        "model.phrasal.p0": _frac(nullable=True),  # null: by corpus size (REGIMENS)
        "model.phrasal.max_phrase_len": Rule("int", lo=1, hi=16),  # phrase_lists.MAX_PHRASE_LEN
        "model.phrasal.eta": _pos(),
        "model.phrasal.lam": _pos(),
        "model.phrasal.n_contiguous": _int(0),
        "model.phrasal.n_gappy": _int(0),
        "model.phrasal.iterations": _iterations(nullable=True),
        "model.phrasal.agreement": Rule("bool"),
        "model.phrasal.discount": Rule("float", lo=0),
        "model.phrasal.min_count": _int(1, nullable=True),
        "model.phrasal.rank": Rule("str", choices=("probability", "count")),
        "model.phrasal.gappy_discount": Rule("float", lo=0, nullable=True),
        "model.phrasal.gappy_min_count": _int(1, nullable=True),
        "model.phrasal.gappy_rank": Rule("str", choices=("probability", "count"),
                                         nullable=True),
        "model.tune_grid.thresholds": Rule("float", lo=0, hi=1, each=True),
    },
    "hmm": {
        "model.p0": _frac(),
        "model.ibm1_iterations": _iterations(),
        "model.hmm_iterations": _iterations(),
        "model.max_jump": _int(1),
        "model.alpha": Rule("float", lo=0),
        "model.null_alpha": Rule("float", lo=0),
        "model.batch_cells": _int(1),
        "model.decoding.threshold": Rule("float", lo=0, hi=1),  # issue 25: 5 gave AER 1.0
        "model.tune_grid.thresholds": Rule("float", lo=0, hi=1, each=True),
    },
    "bayesian": {
        "model.decoding.threshold": Rule("float", lo=0, hi=1, nullable=True),
        "model.tune_grid.thresholds": Rule("float", lo=0, hi=1, each=True),
    },
}

# the baseline task (no model family): {section: "module:Class" of its config dataclass}
_BASELINE_CONFIGS = {"model": "aligners.training.baseline:DiagonalConfig",
                     "data": "aligners.training.baseline:GoldData"}


def task_configs() -> dict[str, dict[str, str]]:
    """task -> {section: "module:Class" of its config dataclass} ("" = the top-level keys):
    each family's `sections` (`aligners.families`), and the baseline's."""
    from aligners.families import families

    return {"baseline": _BASELINE_CONFIGS,
            **{f.task_name: dict(f.sections) for f in families() if f.sections}}


def check_value(name: str, value: Any, rule: Rule) -> Any:
    """`value` if it obeys `rule`, else AlignersInputError `NAME must be ...; got VALUE`."""
    if value is None and rule.nullable:
        return value
    if rule.listable and not (isinstance(value, list | tuple) or _is_listconfig(value)):
        _check_one(name, value, Rule(**{**rule.__dict__, "listable": False}), shown=rule)
        return value
    if rule.each or rule.listable:
        items = list(value) if isinstance(value, list | tuple) or _is_listconfig(value) else None
        if items is None or (rule.nonempty and not items):
            raise AlignersInputError(f"{name} must be {rule.describe()}; got {value!r}")
        one = Rule(**{**rule.__dict__, "each": False, "listable": False, "nullable": False,
                      "nonempty": False})
        for item in items:
            _check_one(name, item, one, shown=rule)
        return value
    return _check_one(name, value, rule, shown=rule)


def _is_listconfig(value) -> bool:
    try:
        from omegaconf import ListConfig
    except ImportError:  # pragma: no cover
        return False
    return isinstance(value, ListConfig)


def _check_one(name: str, value: Any, rule: Rule, *, shown: Rule) -> Any:
    def bad():
        return AlignersInputError(f"{name} must be {shown.describe()}; got {value!r}")

    if value is None:
        if rule.nullable:
            return value
        raise bad()
    if rule.kind == "bool":
        if not isinstance(value, bool):
            raise bad()
        return value
    if rule.kind == "str":
        if not isinstance(value, str) or (rule.choices and value not in rule.choices):
            raise bad()
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad()
    if rule.choices and value not in rule.choices:
        raise bad()
    if rule.kind == "int" and not isinstance(value, int):
        raise bad()
    if not math.isfinite(value):
        raise bad()
    if rule.lo is not None and (value < rule.lo or (rule.lo_open and value == rule.lo)):
        raise bad()
    if rule.hi is not None and (value > rule.hi or (rule.hi_open and value == rule.hi)):
        raise bad()
    return value


def _lookup(cfg, dotted: str):
    """(found, value) of a dotted key in a DictConfig / dict."""
    node = cfg
    for part in dotted.split("."):
        try:
            if part not in node:
                return False, None
            node = node[part]
        except TypeError:  # a scalar where a mapping was expected
            return False, None
    return True, node


def config_class(target: str) -> type:
    """The dataclass named by "package.module:Class" (imported on demand)."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _section(f) -> type | None:
    """The dataclass of a nested-section field (`field(default_factory=Sub)`), else None."""
    sub = f.default_factory
    return sub if isinstance(sub, type) and is_dataclass(sub) else None


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def rules_of(cls: type, prefix: str = "") -> dict[str, Rule]:
    """{dotted key: Rule} of dataclass `cls` (its `RULES`) and of its nested sections."""
    own = getattr(cls, "RULES", {})
    out = {_join(prefix, k): r for k, r in own.items()}
    for f in fields(cls):
        sub = _section(f)
        if sub is not None:
            out.update(rules_of(sub, _join(prefix, f.name)))
    return out


def check_config(cfg, task: str | None = None) -> None:
    """Check the keys of `RULES["*"]`, `RULES[task]` and the dataclass rules of the task's
    sections (`task_configs()`) that `cfg` sets (one line per error)."""
    rules = {**RULES["*"], **RULES.get(task or "", {})}
    for section, target in task_configs().get(task or "", {}).items():
        rules.update(rules_of(config_class(target), section))
    for key, rule in rules.items():
        found, value = _lookup(cfg, key)
        if found:
            check_value(key, value, rule)


def _plain(value):
    try:
        from omegaconf import OmegaConf
    except ImportError:  # pragma: no cover
        return value
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def from_config(cls: type, node=None, where: str = "model", *, strict: bool = True):
    """An instance of dataclass `cls` from the mapping `node` (a DictConfig section, a dict,
    or None): each field takes the node's value, checked by `cls.RULES`, or its default (a
    field without one is required); a nested section reads its sub-mapping. With `strict`, a
    key of `node` that is no field is refused (AlignersInputError naming `where`). Values
    come back as plain lists / dicts."""
    node = {} if node is None else node
    names = {f.name: f for f in fields(cls)}
    if strict:
        unknown = sorted(str(k) for k in node.keys() if k not in names)
        if unknown:
            raise AlignersInputError(
                f"{_join(where, unknown[0])} is not a setting of {where or 'the task'} "
                f"({cls.__name__}); expected one of {', '.join(sorted(names))}")
    rules, values = getattr(cls, "RULES", {}), {}
    for name, f in names.items():
        if name not in node:
            if f.default is MISSING and f.default_factory is MISSING:
                what = f" ({rules[name].describe()})" if name in rules else ""
                raise AlignersInputError(f"{_join(where, name)} is required{what}")
            continue
        sub = _section(f)
        if sub is not None:
            values[name] = from_config(sub, node[name], _join(where, name), strict=strict)
            continue
        value = _plain(node[name])
        if name in rules:
            check_value(_join(where, name), value, rules[name])
        values[name] = value
    return cls(**values)


def check_options(args, rules: dict[str, Rule]) -> None:
    """The same for parsed argparse options: `rules` maps dest -> Rule; the flag is named."""
    for dest, rule in rules.items():
        if hasattr(args, dest):
            check_value("--" + dest.replace("_", "-"), getattr(args, dest), rule)
