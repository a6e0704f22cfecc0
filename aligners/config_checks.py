"""Config and option validation, once, where they are read: one table of rules.

`check_config(cfg, task)` checks every key of `RULES["*"]` and `RULES[task]` that the config
sets (dotted paths; a missing key is not checked) and raises `AlignersInputError` with one
line, e.g. `model.p0 must be a number in [0, 1); got 5`. `aligners/run.py` calls it before
every task; CLI commands call `check_options(args, {dest: Rule})` with the same rules.
Cost: O(number of rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aligners.errors import AlignersInputError

__all__ = ["Rule", "RULES", "check_value", "check_config", "check_options"]


@dataclass(frozen=True)
class Rule:
    """`kind` "int" | "float" | "bool" | "str"; bounds `lo`/`hi` (open when `lo_open` /
    `hi_open`); `nullable`: null allowed; `choices`: allowed values; `each`: the value is a
    list whose every item obeys the rule."""

    kind: str = "float"
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    choices: tuple = ()
    each: bool = False

    def describe(self) -> str:
        what = {"int": "an integer", "float": "a number", "bool": "true or false",
                "str": "a string"}[self.kind]
        if self.choices:
            return f"one of {', '.join(map(str, self.choices))}"
        if self.lo is not None and self.hi is not None:
            what += (f" in {'(' if self.lo_open else '['}{_num(self.lo)}, "
                     f"{_num(self.hi)}{')' if self.hi_open else ']'}")
        elif self.lo is not None:
            what += f" {'>' if self.lo_open else '>='} {_num(self.lo)}"
        elif self.hi is not None:
            what += f" {'<' if self.hi_open else '<='} {_num(self.hi)}"
        what += " or null" if self.nullable else ""
        return f"a list whose items are each {what}" if self.each else what


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _int(lo=None, **kw) -> Rule:
    return Rule("int", lo=lo, **kw)


def _pos(**kw) -> Rule:
    return Rule("float", lo=0, lo_open=True, **kw)


def _frac(**kw) -> Rule:  # [0, 1)
    return Rule("float", lo=0, hi=1, hi_open=True, **kw)


# task -> {dotted key: rule}; "*" applies to every task
RULES: dict[str, dict[str, Rule]] = {
    "*": {
        "seed": _int(),
        "threads": _int(1),
        "data.limit": _int(0, nullable=True),
        "data.train_limit": _int(0, nullable=True),
        "data.test_limit": _int(0, nullable=True),
    },
    "baseline": {
        "data.name": Rule("str"),
        "data.split": Rule("str", nullable=True),
    },
    "reorder": {
        "data.heldout_fraction": Rule("float", lo=0, hi=1, lo_open=True, hi_open=True),
        "data.dev_fraction": _frac(),
        "evaluate_on": Rule("str", choices=("heldout", "dev")),
        "speed_repeats": _int(1),
        "model.extract.max_length": _int(1),
        "model.extract.mode": Rule("str", choices=("wbe", "phrase", "hier")),
        "model.extract.direction": Rule("str", choices=("backward", "forward")),
        "model.features.min_count": _int(0),
        "model.lexical.smoothing": Rule("float", lo=0),
        "model.primal.sigma2": _pos(),
        "model.primal.epochs": _int(1),
        "model.primal.lr": _pos(),
        "model.dual.sigma2": _pos(),
        "model.dual.eps": Rule("float", lo=0, each=True),
        "model.dual.max_iter": _int(1),
        "model.dual.init_eps": Rule("float", lo=0, hi=1, lo_open=True, hi_open=True),
        "model.dual.max_trial": _int(1),
        "model.dual.step": _pos(),
        "model.dual.step_growth": _pos(),
        "model.naive_bayes.alpha": _pos(),
        "model.naive_bayes.inference": Rule("str", choices=("map", "bayes"), each=True),
        "model.naive_bayes.mi_fractions": _frac(each=True),
    },
    # word / monolingual keys (their task modules are run through aligners/run.py too)
    "word_align": {
        "model.p0": _frac(),
        "model.ibm1_iterations": _int(0),
        "model.hmm_iterations": _int(0),
        "model.max_jump": _int(1),
        "model.alpha": Rule("float", lo=0),
        "model.null_alpha": Rule("float", lo=0),
        "model.batch_cells": _int(1),
        "model.decoding.threshold": Rule("float", lo=0, hi=1),  # issue 25: 5 gave AER 1.0
        "model.tune_grid.thresholds": Rule("float", lo=0, hi=1, each=True),
    },
    "bayes_align": {
        "model.decoding.threshold": Rule("float", lo=0, hi=1),
        "model.tune_grid.thresholds": Rule("float", lo=0, hi=1, each=True),
    },
    "phrasal_align": {
        "model.tune_grid.thresholds": Rule("float", lo=0, hi=1, each=True),
    },
    "monolingual": {
        "model.max_src_len": _int(1),
        "model.max_tgt_len": _int(1),
        "training.threads": _int(1),
    },
}


def check_value(name: str, value: Any, rule: Rule) -> Any:
    """`value` if it obeys `rule`, else AlignersInputError `NAME must be ...; got VALUE`."""
    if rule.each:
        items = list(value) if isinstance(value, list | tuple) or _is_listconfig(value) else None
        if items is None:
            raise AlignersInputError(f"{name} must be {rule.describe()}; got {value!r}")
        one = Rule(**{**rule.__dict__, "each": False})
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


def check_config(cfg, task: str | None = None) -> None:
    """Check the keys of `RULES["*"]` and `RULES[task]` that `cfg` sets (one line per error)."""
    rules = {**RULES["*"], **RULES.get(task or "", {})}
    for key, rule in rules.items():
        found, value = _lookup(cfg, key)
        if found:
            check_value(key, value, rule)


def check_options(args, rules: dict[str, Rule]) -> None:
    """The same for parsed argparse options: `rules` maps dest -> Rule; the flag is named."""
    for dest, rule in rules.items():
        if hasattr(args, dest):
            check_value("--" + dest.replace("_", "-"), getattr(args, dest), rule)
