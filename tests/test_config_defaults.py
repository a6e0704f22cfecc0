"""One source of defaults: the config dataclasses, registered as Hydra schemas.

`aligners.run` registers each task's `model` dataclass defaults as `model/<task>_schema`; a
file of configs/model/ extends it and holds only what it changes (every key of it is a
field whose value differs from the default), and the composed config is the schema with the
file's changes. Every experiment's composed config reads cleanly into its task's
dataclasses (no unknown key, no bad value); a misspelt key or a bad value is one line; every
`aligners reorder` / `aligners monoalign` default is the dataclass's; the models' keyword
defaults are the dataclass's too."""

from __future__ import annotations

import inspect
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest
import yaml
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from aligners.config_checks import (
    defaults_of,
    from_config,
    rules_of,
    task_configs,
)
from aligners.families import resolve
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.models.lclr.config import LCLRConfig
from aligners.models.mono.config import MonoConfig, MonoTraining
from aligners.models.reorder.config import (
    DualConfig,
    ExtractConfig,
    FeatureConfig,
    LexicalConfig,
    NaiveBayesConfig,
    PrimalConfig,
    ReorderData,
)
from tests.test_configs import _compose, _names, _plain

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

def _schema(group: str, name: str) -> dict:
    return OmegaConf.to_container(ConfigStore.instance().repo[group][f"{name}.yaml"].node)


def _doc(group: str, name: str) -> dict:
    return yaml.safe_load((CONFIGS / group / f"{name}.yaml").read_text(encoding="utf-8"))


def _extending() -> list[tuple[str, str]]:
    """(group, name) of the model and data files that extend a schema: every model file;
    the data files of the tasks with a data dataclass."""
    return [(g, n) for g in ("model", "data") for n in _names(g) if "defaults" in _doc(g, n)]


def test_the_schemas_are_the_dataclass_defaults():
    for task, sections in task_configs().items():
        for group in ("model", "data"):
            if group in sections:
                cls = resolve(sections[group])
                name = f"{task.replace('-', '_')}_schema"
                assert _schema(group, name) == defaults_of(cls), (group, task)
    assert len(_extending()) == len(_names("model")) + 9


@pytest.mark.parametrize("group,name", _extending())
def test_a_file_extends_its_schema_with_only_what_it_changes(group, name):
    doc = _doc(group, name)
    schema = doc.pop("defaults")
    assert len(schema) == 2 and schema[1] == "_self_", name
    defaults = _schema(group, schema[0])

    def walk(node: dict, default: dict, where: str):
        for key, value in node.items():
            assert key in default, f"{name}.yaml: {where}{key} is no field of the schema"
            if isinstance(value, dict) and isinstance(default[key], dict):
                walk(value, default[key], f"{where}{key}.")
            else:
                assert value != default[key], f"{name}.yaml restates {where}{key}"
    walk(doc, defaults, "")


@pytest.mark.parametrize("group,name", _extending())
def test_the_composed_section_is_the_schema_with_the_file(group, name, tmp_path):
    doc = _doc(group, name)
    want = OmegaConf.merge(_schema(group, doc.pop("defaults")[0]), doc)
    got = _compose("train", [f"{group}={name}"], tmp_path)[group]
    assert OmegaConf.to_container(got, resolve=True) == OmegaConf.to_container(want,
                                                                               resolve=True)


def test_a_misspelt_key_or_a_bad_value_is_one_line(tmp_path):
    from hydra.errors import HydraException

    from aligners.errors import AlignersInputError
    from aligners.run import check

    with pytest.raises(HydraException, match="Could not override 'model.p00'"):
        _compose("train", ["experiment=default", "model.p00=0.1"], tmp_path)
    for override, message in (("model.p0=abc", "model.p0 must be a number in [0, 1); got 'abc'"),
                              ("+model.p00=0.1", "model.p00 is not a setting of model "
                                                 "(HMMTaskConfig); expected one of "),
                              ("model.tune_grid.methods=[agreement,foo]",
                               "model.tune_grid.methods must be a non-empty list whose items are "
                               "each one of agreement, posterior, viterbi; got 'foo'"),
                              ("model.tune_grid.heuristics=[gdfa]",
                               "model.tune_grid.heuristics must be a non-empty list whose items "
                               "are each one of intersect, "),
                              ("model.kind=tokens", "model.kind must be one of token, phrase, "
                                                    "neural; got 'tokens'")):
        experiment = "tokencrf_msr06" if "kind" in override else "default"
        cfg = _plain(_compose("train", [f"experiment={experiment}", override], tmp_path))
        with pytest.raises(AlignersInputError) as err:
            check(cfg)
        assert str(err.value).startswith(message) and "\n" not in str(err.value)


def _task_classes():
    for task, sections in task_configs().items():
        for section, target in sections.items():
            yield task, section, resolve(target)


@pytest.mark.parametrize("task,section,cls", list(_task_classes()),
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_rules_name_fields(task, section, cls):
    """Every rule of a dataclass (and of its nested sections) names one of its fields."""
    def fields_of(c, prefix=""):
        out = set()
        for f in fields(c):
            sub = f.default_factory
            sub = sub if isinstance(sub, type) and is_dataclass(sub) else None
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
        from_config(resolve(target), node, section, strict=section != "")


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
