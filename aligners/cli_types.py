"""argparse from the config dataclasses (no torch): an option per field that names a `flag`
(`aligners.config_checks.setting`), its help from the field, its value checked by the
field's rule, one message for a bad number."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, fields

from aligners.config_checks import check, meta

__all__ = ["int_at_least", "flags", "add_options", "given", "from_options"]


def _parse(kind: str, low: int | None = None, high: int | None = None):
    """argparse type: an integer ("int", within [low, high] when given) or a number."""
    def parse(text: str):
        try:
            value = int(text) if kind == "int" else float(text)
        except ValueError:
            what = "an integer" if kind == "int" else "a number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            what = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
        return value
    return parse


def int_at_least(low: int, high: int | None = None):
    """argparse type: an integer >= `low` (and <= `high` when given)."""
    return _parse("int", low, high)


def flags(cls: type) -> dict[str, str]:
    """{field: flag} of the fields of dataclass `cls` that are command-line options."""
    return {f.name: flag for f in fields(cls) if (flag := meta(cls, f.name, "flag"))}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_options(group, cls: type, *names: str) -> None:
    """One option of `group` per field of `cls` with a flag (`names`: those fields, in that
    order). Unset, an option is None (a flag `--no-X` of a bool field, False): the field
    keeps its default, which the help's `{default}` shows. `--X` of a bool field sets it
    true, `--no-X` false; a rule's choices are the option's choices."""
    table = flags(cls)
    for name in names or table:
        flag, rule, f = table[name], meta(cls, name, "rule"), cls.__dataclass_fields__[name]
        text = (meta(cls, name, "help") or "").format(
            default=None if f.default is MISSING else f.default)
        if f.type in ("bool", bool):
            group.add_argument(flag, action="store_true", help=text)
            continue
        kind = rule.kind if rule is not None else "str"
        group.add_argument(flag, default=None, help=text,
                           choices=(rule.choices or None) if rule else None,
                           type=_parse(kind) if kind in ("int", "float") else None)


def given(cls: type, args: argparse.Namespace) -> dict:
    """{field: value} of the options of `cls` set on the command line."""
    out = {}
    for name, flag in flags(cls).items():
        value = getattr(args, _dest(flag), None)
        if value is not None and value is not False:
            out[name] = not flag.startswith("--no-") if value is True else value
    return out


def from_options(cls: type, args: argparse.Namespace, **fixed):
    """An instance of `cls`: the options given (`given`) and `fixed` over the defaults,
    checked (`aligners.config_checks.check`); a bad value names its flag (`--p0 must be
    ...`)."""
    values = check({**given(cls, args), **fixed}, cls, names=flags(cls))
    return check(cls(**values))
