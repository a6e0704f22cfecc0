"""Settings and their checks, once: every rule is declared on its config dataclass field.

A config dataclass (e.g. `aligners.models.reorder.config.ReorderConfig`) is the one source of
its section's defaults and value rules: a field written `setting(default, rule)` carries its
`Rule` (and, for an `aligners align` option, its `flag` and `help`, `aligners.cli_types`) in
the field's metadata; a field whose default is a dataclass (`setting(factory=Sub)`) is a
nested section. A subclass that only changes a default keeps the rule of the field it
overrides.

`check(node, cls)` is the one check, called by every entry point: the Hydra tasks
(`check_config`, `from_config`), the CLI (`aligners.cli_types.from_options`, `check_options`)
and the Python API (`aligners.align`). A bad value is one `AlignersInputError` line naming it
the way the user wrote it: `model.p0 must be a number in [0, 1); got 5`, `--p0 must be ...`,
`p0 must be ...`. `task_configs()` maps a task to its sections' dataclasses. Cost: O(number
of rules).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Any

from aligners.errors import AlignersInputError

__all__ = ["MAX_ITERATIONS", "Rule", "setting", "maybe", "one_of", "at_least", "BOOL", "POS",
           "NONNEG", "FRAC", "UNIT", "ITERATIONS", "Common", "task_configs", "check", "check_value",
           "check_config", "check_options", "rules_of", "meta", "from_config", "defaults_of"]


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


def maybe(rule: Rule) -> Rule:
    """`rule`, null allowed too."""
    return replace(rule, nullable=True)


def one_of(*choices, **kw) -> Rule:
    """One of `choices` (strings, else integers)."""
    return Rule("str" if isinstance(choices[0], str) else "int", choices=choices, **kw)


def at_least(lo: int, **kw) -> Rule:
    """An integer >= `lo`."""
    return Rule("int", lo=lo, **kw)


# the bound of every iteration / epoch count (EM, SGD, EG): a typo must not run for ever
MAX_ITERATIONS = 1000
BOOL, POS, NONNEG = Rule("bool"), Rule("float", lo=0, lo_open=True), Rule("float", lo=0)
FRAC, UNIT = Rule("float", lo=0, hi=1, hi_open=True), Rule("float", lo=0, hi=1)
ITERATIONS = Rule("int", lo=0, hi=MAX_ITERATIONS)


def setting(default: Any = MISSING, rule: Rule | None = None, *, factory: Any = MISSING,
            flag: str | None = None, help: str | None = None,  # noqa: A002 (argparse's word)
            section: type | None = None):
    """A dataclass field with its `rule`; `flag` and `help` make it an `aligners align`
    option (`aligners.cli_types.add_options`; `{default}` in `help` is the field's default).
    `factory`: the default factory (a dataclass: a nested section; `section` names the
    dataclass of a section whose factory is a function)."""
    info = {"rule": rule, "flag": flag, "help": help, "section": section}
    return field(default=default, default_factory=factory,
                 metadata={k: v for k, v in info.items() if v is not None})


def meta(cls: type, name: str, key: str):
    """Metadata `key` ("rule", "flag", "help") of field `name` of dataclass `cls`, from the
    nearest class of its MRO that declares it."""
    for klass in cls.__mro__:
        f = getattr(klass, "__dataclass_fields__", {}).get(name)
        if f is not None and key in f.metadata:
            return f.metadata[key]
    return None


def _section(f) -> type | None:
    """The dataclass of a nested-section field (`setting(factory=Sub)`), else None."""
    sub = f.metadata.get("section", f.default_factory)
    return sub if isinstance(sub, type) and is_dataclass(sub) else None


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def rules_of(cls: type, prefix: str = "") -> dict[str, Rule]:
    """{dotted key: Rule} of dataclass `cls` and of its nested sections."""
    out = {}
    for f in fields(cls):
        sub = _section(f)
        if sub is not None:
            out.update(rules_of(sub, _join(prefix, f.name)))
        elif (rule := meta(cls, f.name, "rule")) is not None:
            out[_join(prefix, f.name)] = rule
    return out


def check_value(name: str, value: Any, rule: Rule) -> Any:
    """`value` if it obeys `rule`, else AlignersInputError `NAME must be ...; got VALUE`."""
    if value is None and rule.nullable:
        return value
    if rule.listable and not _is_list(value):
        _check_one(name, value, replace(rule, listable=False), shown=rule)
        return value
    if rule.each or rule.listable:
        if not _is_list(value) or (rule.nonempty and not list(value)):
            raise AlignersInputError(f"{name} must be {rule.describe()}; got {value!r}")
        one = replace(rule, each=False, listable=False, nullable=False, nonempty=False)
        for item in value:
            _check_one(name, item, one, shown=rule)
        return value
    return _check_one(name, value, rule, shown=rule)


def _is_list(value) -> bool:
    from omegaconf import ListConfig

    return isinstance(value, list | tuple | ListConfig)


def _check_one(name: str, value: Any, rule: Rule, *, shown: Rule) -> Any:
    """`value` (one item, null already dealt with by `check_value`) if it obeys `rule`."""
    if rule.kind == "bool":
        ok = isinstance(value, bool)
    elif rule.kind == "str":
        ok = isinstance(value, str) and (not rule.choices or value in rule.choices)
    else:
        ok = (not isinstance(value, bool) and isinstance(value, int | float)
              and (not rule.choices or value in rule.choices)
              and (rule.kind != "int" or isinstance(value, int)) and math.isfinite(value)
              and (rule.lo is None or (value > rule.lo if rule.lo_open else value >= rule.lo))
              and (rule.hi is None or (value < rule.hi if rule.hi_open else value <= rule.hi)))
    if not ok:
        raise AlignersInputError(f"{name} must be {shown.describe()}; got {value!r}")
    return value


def _lookup(node, dotted: str):
    """(found, value) of a dotted key in a DictConfig / dict, or a dataclass / Namespace."""
    for part in dotted.split("."):
        if hasattr(node, "keys"):
            if part not in node:
                return False, None
            node = node[part]
        elif hasattr(node, "__dict__") and hasattr(node, part):
            node = getattr(node, part)
        else:  # missing, or a scalar where a section was expected
            return False, None
    return True, node


def check(node, cls: type | None = None, *, where: str = "", names: dict | None = None):
    """`node` (a dataclass instance, a mapping or a DictConfig) if every value it sets obeys
    the rules of dataclass `cls` (default: the node's class); keys it does not set are not
    checked. A bad value is named `where.key`, or `names[key]` (a command-line flag: then
    never "or null", an option is given or not). An instance of `cls` with an
    `invariants()` method (settings that depend on each other) is then asked too."""
    cls = cls or type(node)
    for key, rule in rules_of(cls).items():
        found, value = _lookup(node, key)
        if not found:
            continue
        if names is not None and value is not None:
            rule = replace(rule, nullable=False)
        check_value(names.get(key, key) if names is not None else _join(where, key),
                    value, rule)
    if isinstance(node, cls) and hasattr(node, "invariants"):
        node.invariants()
    return node


@dataclass
class _CommonData:
    train_limit: int | None = setting(None, at_least(1, nullable=True))  # first N; null: all
    test_limit: int | None = setting(None, at_least(1, nullable=True))


@dataclass
class Common:
    """The keys every task reads (configs/train.yaml; `data.*_limit` in each data file)."""

    seed: int = setting(rule=Rule("int"))
    threads: int = setting(rule=Rule("int", lo=1))
    data: _CommonData = setting(factory=_CommonData)


def task_configs() -> dict[str, dict[str, str]]:
    """task -> {section: "module:Class" of its config dataclass} ("" = the top-level keys):
    each family's `sections` (`aligners.families`), over which its config module's
    `TASK_SECTIONS` win, and the baseline's."""
    from aligners.families import families

    out = {"baseline": {"model": "aligners.training.baseline:DiagonalConfig",  # no family
                        "data": "aligners.training.baseline:GoldData"}}
    for f in families():
        module = importlib.import_module(f.config.partition(":")[0]) if f.config else None
        sections = {**f.sections, **getattr(module, "TASK_SECTIONS", {})}
        if sections:
            out[f.task_name] = sections
    return out


def defaults_of(cls_or_obj) -> dict:
    """{field: default} of a dataclass (or the values of an instance), a nested section as
    its own dict, a tuple as a list, a required field as "???" (OmegaConf's missing value):
    the Hydra schema of a config section (`aligners.run` registers them)."""
    out = {}
    for f in fields(cls_or_obj):
        if not isinstance(cls_or_obj, type):
            value = getattr(cls_or_obj, f.name)
        elif f.default is not MISSING:
            value = f.default
        else:
            value = "???" if f.default_factory is MISSING else f.default_factory()
        out[f.name] = (defaults_of(value) if is_dataclass(value)
                       else list(value) if isinstance(value, tuple) else value)
    return out


def check_config(cfg, task: str | None = None) -> None:
    """Check the keys every task reads (`Common`) and the sections of `task`
    (`task_configs()`) that `cfg` sets (one line per error)."""
    from aligners.families import resolve

    check(cfg, Common)
    for section, target in task_configs().get(task or "", {}).items():
        found, node = _lookup(cfg, section) if section else (True, cfg)
        if found and node is not None:
            cls = resolve(target)
            check(node, cls, where=section)
            if section:  # a misspelt `+model.p00=...` is refused, not silently ignored
                _known_keys(cls, node, section)


def _known_keys(cls: type, node, where: str) -> None:
    """AlignersInputError naming the first key of mapping `node` (and of its nested
    sections) that is no field of dataclass `cls`."""
    names = {f.name: f for f in fields(cls)}
    unknown = sorted(str(k) for k in node.keys() if k not in names)
    if unknown:
        raise AlignersInputError(
            f"{_join(where, unknown[0])} is not a setting of {where or 'the task'} "
            f"({cls.__name__}); expected one of {', '.join(sorted(names))}")
    for name, f in names.items():
        sub = _section(f)
        if sub and hasattr(node.get(name), "keys"):
            _known_keys(sub, node[name], _join(where, name))


def _plain(value):
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def from_config(cls: type, node=None, where: str = "model", *, strict: bool = True):
    """An instance of dataclass `cls` from the mapping `node` (a DictConfig section, a dict,
    or None), checked (`check`): each field takes the node's value or its default (a field
    without one is required); a nested section reads its sub-mapping. With `strict`, a key
    of `node` that is no field is refused (AlignersInputError naming `where`). Values come
    back as plain lists / dicts."""
    node = {} if node is None else node
    check(node, cls, where=where)
    if strict:  # the whole tree, nested sections included
        _known_keys(cls, node, where)
    return _build(cls, node, where)


def _build(cls: type, node, where: str):
    node = {} if node is None else node
    names = {f.name: f for f in fields(cls)}
    values = {}
    for name, f in names.items():
        if name in node:
            sub = _section(f)
            values[name] = (_build(sub, node[name], _join(where, name)) if sub
                            else _plain(node[name]))
        elif f.default is MISSING and f.default_factory is MISSING:
            rule = meta(cls, name, "rule")
            what = f" ({rule.describe()})" if rule else ""
            raise AlignersInputError(f"{_join(where, name)} is required{what}")
    return cls(**values)


def check_options(args, rules: dict[str, Rule]) -> None:
    """The same for parsed argparse options: `rules` maps dest -> Rule; the flag is named."""
    for dest, rule in rules.items():
        if hasattr(args, dest):
            check_value("--" + dest.replace("_", "-"), getattr(args, dest), rule)
