"""One source of defaults: the config dataclasses.

Every key of every `configs/model/*.yaml` is a field of its family's dataclass, and its value
is the field's default unless its line carries a comment saying why; every experiment's
composed config reads cleanly into its task's dataclasses (no unknown key, no bad value);
every `aligners reorder` / `aligners monoalign` default is the dataclass's; the models'
keyword defaults are the dataclass's too."""

from __future__ import annotations

import inspect
import re
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path

import pytest
import yaml

from aligners.config_checks import config_class, from_config, rules_of, task_configs
from aligners.models.bayesian.config import BayesTaskConfig
from aligners.models.gappy_hsmm.config import GappyTaskConfig, PhrasalConfig
from aligners.models.hmm.config import HMMTaskConfig, WordAlignConfig
from aligners.models.lclr.config import LCLRConfig
from aligners.models.mono.config import MonoConfig, MonoTraining
from aligners.models.reorder.config import (
    DualConfig,
    ExtractConfig,
    FeatureConfig,
    LexicalConfig,
    NaiveBayesConfig,
    PrimalConfig,
    ReorderConfig,
    ReorderData,
)
from aligners.training.baseline import DiagonalConfig
from tests.test_configs import _compose, _names, _plain

MODEL = Path(__file__).resolve().parents[1] / "configs" / "model"

# file -> {section ("" = the file's top level): dataclass}
FAMILIES = {
    "hmm": {"": HMMTaskConfig},
    "gappy_hsmm": {"word": WordAlignConfig, "start": WordAlignConfig,
                   "phrasal": PhrasalConfig, "": GappyTaskConfig},
    "bayesian": {"": BayesTaskConfig},
    "diagonal": {"": DiagonalConfig},
    "lclr_entailment": {"": LCLRConfig},
    "lclr_paraphrase": {"": LCLRConfig},
    "lclr_transliteration": {"": LCLRConfig},
    "mono_neural": {"": MonoConfig},
    "mono_phrase": {"": MonoConfig},
    "mono_token": {"": MonoConfig},
    "reorder": {"": ReorderConfig},
}
# Keys that no dataclass holds: none (a key added to a YAML file needs its field)
KNOWN_GAPS: dict[str, set] = {}


def _section(cls, name):
    """The nested-section dataclass of field `name` of `cls`, else None."""
    for f in fields(cls):
        sub = f.default_factory
        if f.name == name and isinstance(sub, type) and is_dataclass(sub):
            return sub
    return None


def _default(f):
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else MISSING


def _commented_keys(path: Path) -> set[str]:
    """Dotted keys of `path` whose line carries a `#` comment (block-style YAML)."""
    out, stack = set(), []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"( *)([A-Za-z_][\w]*):(.*)$", line)
        if not m:
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([k for _, k in stack] + [key])
        if "#" in rest:
            out.add(dotted)
        stack.append((indent, key))
    return out


def _walk(node: dict, cls, prefix: str, missing: set, differ: list):
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        names = {f.name: f for f in fields(cls)}
        if key not in names:
            missing.add(dotted)
            continue
        sub = _section(cls, key)
        if sub is not None and isinstance(value, dict):
            _walk(value, sub, dotted + ".", missing, differ)
            continue
        default = _default(names[key])
        if default is not MISSING and value != default:
            differ.append(dotted)


def _check_file(name: str, root: Path = MODEL):
    """(keys no dataclass holds, keys whose value differs from the default)."""
    spec = FAMILIES[name]
    data = yaml.safe_load((root / f"{name}.yaml").read_text(encoding="utf-8"))
    missing, differ = set(), []
    for key, value in data.items():
        if key in spec and key != "":
            _walk(value, spec[key], f"{key}.", missing, differ)
        elif "" in spec:
            _walk({key: value}, spec[""], "", missing, differ)
        else:
            missing.add(key)
    return missing, differ


def test_every_model_config_file_has_a_family():
    assert sorted(FAMILIES) == _names("model")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_model_config_keys_are_dataclass_fields(name):
    missing, _ = _check_file(name)
    assert missing == KNOWN_GAPS.get(name, set()), (
        f"{name}.yaml: keys not in the dataclass {sorted(missing)} (known: "
        f"{sorted(KNOWN_GAPS.get(name, ()))})")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_model_config_values_are_the_defaults_unless_commented(name):
    _, differ = _check_file(name)
    silent = sorted(set(differ) - _commented_keys(MODEL / f"{name}.yaml"))
    assert not silent, f"{name}.yaml differs from its dataclass without a comment: {silent}"


def test_the_checks_find_unknown_keys_and_silent_differences(tmp_path):
    (tmp_path / "reorder.yaml").write_text("primal:\n  sigma2: 1.0\n  lr: 0.05  # why\n"
                                           "dual:\n  max_iter: 20   # why\n  bogus: 1\n")
    missing, differ = _check_file("reorder", tmp_path)
    assert missing == {"dual.bogus"}
    assert sorted(set(differ) - _commented_keys(tmp_path / "reorder.yaml")) == ["primal.sigma2"]


def _task_classes():
    for task, sections in task_configs().items():
        for section, target in sections.items():
            yield task, section, config_class(target)


@pytest.mark.parametrize("task,section,cls", list(_task_classes()),
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_rules_name_fields(task, section, cls):
    """Every rule of a dataclass (and of its nested sections) names one of its fields."""
    def fields_of(c, prefix=""):
        out = set()
        for f in fields(c):
            sub = _section(c, f.name)
            out |= fields_of(sub, f"{prefix}{f.name}.") if sub else {prefix + f.name}
        return out
    assert set(rules_of(cls)) <= fields_of(cls)


@pytest.mark.parametrize("experiment", _names("experiment"))
def test_every_experiment_reads_into_its_dataclasses(experiment, tmp_path):
    """... and so sets no key its task would ignore."""
    cfg = _plain(_compose("train", [f"experiment={experiment}"], tmp_path))
    if cfg.get("model") is None:
        pytest.skip(f"{experiment} is a fragment other experiments include")
    for section, target in task_configs().get(cfg.task, {}).items():
        node = cfg if section == "" else cfg.get(section)
        from_config(config_class(target), node, section, strict=section != "")


# `aligners reorder` / `aligners monoalign` option -> where its default comes from
REORDER_CLI = {
    "max_length": (ExtractConfig, "max_length"), "orientation": (ExtractConfig, "mode"),
    "direction": (ExtractConfig, "direction"), "min_count": (FeatureConfig, "min_count"),
    "inference": (NaiveBayesConfig, "inference"), "alpha": (NaiveBayesConfig, "alpha"),
    "sigma2": (PrimalConfig, "sigma2"), "epochs": (PrimalConfig, "epochs"),
    "lr": (PrimalConfig, "lr"), "eps": (DualConfig, "eps"),
    "max_iter": (DualConfig, "max_iter"), "limit": (ReorderData, "train_limit"),
    "lowercase": (ReorderData, "lowercase"),
}
MONO_CLI = {
    "decode": (MonoConfig, "decode"), "threshold": (MonoConfig, "threshold"),
    "combine": (MonoConfig, "combine"), "encoder_precision": (MonoConfig, "encoder_precision"),
    "threads": (MonoTraining, "threads"),
}
# options that set no model setting (inputs, outputs, which model, run-time choices)
NOT_SETTINGS = {
    "help", "src", "tgt", "align", "output", "lenient", "no_progress", "quiet", "model",
    "seed",  # the SGD/EG order; the Hydra task takes the run's `seed` (train.yaml: 1234)
    "moses_table",  # lexical: also write the Moses table (the task: model.lexical.write_table)
    "mi_remove",  # one MI cut for the saved model; the task sweeps naive_bayes.mi_fractions
    "input", "source", "target", "blocks", "score", "device",
    "direction",  # monoalign: None = the first direction the saved model has
    "batch_size",  # None: the loaded aligner's own decoding batch
    "overwrite",  # reorder train: -o may replace another family's model folder
    "max_tokens",  # monoalign: the memory bound (commands/monoalign.MAX_TOKENS)
}


def _subparsers(parser):
    import argparse

    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a.choices
    return {}


def _options(parser):
    return [a for a in parser._actions if a.option_strings]


@pytest.mark.parametrize("path", [("reorder", "extract"), ("reorder", "train"),
                                  ("reorder", "predict"), ("monoalign",)])
def test_cli_defaults_come_from_the_dataclasses(path):
    from aligners.cli import build_parser

    p = build_parser()
    for name in path:
        p = _subparsers(p)[name]
    table = MONO_CLI if path[0] == "monoalign" else REORDER_CLI
    checked = 0
    for a in _options(p):
        if a.dest not in table:
            assert a.dest in NOT_SETTINGS, f"{' '.join(path)} --{a.dest}: where does its " \
                                           "default come from?"
            continue
        cls, field = table[a.dest]
        assert a.default == getattr(cls, field), (path, a.dest)
        checked += 1
    assert checked >= 2


def test_one_sigma2_and_the_model_classes_use_the_dataclass_defaults():
    from aligners.models.lclr.model import train_lclr
    from aligners.models.reorder import DualMLR, LexicalReordering, NaiveBayes, PrimalMLR
    from aligners.models.reorder._common import settings

    assert PrimalConfig.sigma2 == DualConfig.sigma2  # one --sigma2, one trainer default

    def defaults(fn):
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()
                if p.default is not inspect.Parameter.empty}

    dual = DualConfig()
    # the one trainer's settings (aligners reorder train, LitReorderer, Dual/PrimalMLR.fit)
    assert settings().items() >= {
        "eps": dual.eps, "init_eps": dual.init_eps, "max_trial": dual.max_trial,
        "reset_step": dual.reset_step, "step": dual.step, "step_growth": dual.step_growth,
        "sigma2": dual.sigma2}.items()
    assert defaults(DualMLR.fit)["max_iter"] == dual.max_iter
    assert defaults(DualMLR.fit_epoch).items() >= {
        "eps": dual.eps, "max_trial": dual.max_trial, "reset_step": dual.reset_step,
        "step": dual.step, "step_growth": dual.step_growth}.items()
    assert defaults(DualMLR.__init__)["sigma2"] == dual.sigma2
    primal = PrimalConfig()
    assert defaults(PrimalMLR.__init__)["sigma2"] == primal.sigma2
    assert defaults(PrimalMLR.fit).items() >= {"epochs": primal.epochs, "lr": primal.lr}.items()
    nb = NaiveBayesConfig()
    assert defaults(NaiveBayes.__init__).items() >= {"alpha": nb.alpha,
                                                     "inference": nb.inference}.items()
    assert defaults(LexicalReordering.__init__)["smoothing"] == LexicalConfig().smoothing
    s = settings()
    assert (s["sigma2"], s["lr"], s["eps"], s["alpha"], s["smoothing"]) == (
        primal.sigma2, primal.lr, dual.eps, nb.alpha, LexicalConfig().smoothing)
    lclr = LCLRConfig(task="paraphrase")
    assert defaults(train_lclr).items() >= {"tol": lclr.tol, "max_outer": lclr.max_outer,
                                            "max_cutting": lclr.max_cutting,
                                            "dcd_tol": lclr.dcd_tol}.items()


def test_choice_tuples_agree_with_their_modules():
    from aligners.features.embedding import PRECISIONS
    from aligners.models.gappy_hsmm.phrase_lists import MAX_PHRASE_LEN, RANK_RULES
    from aligners.models.mono import config as mono

    assert mono.PRECISIONS == PRECISIONS
    phrasal = rules_of(PhrasalConfig)
    assert phrasal["max_phrase_len"].hi == MAX_PHRASE_LEN
    assert phrasal["rank"].choices == RANK_RULES
