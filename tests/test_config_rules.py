"""Out-of-range values are refused in one place for every task (`aligners.config_checks`),
with one exact line; the CLI (`aligners reorder`, `aligners monoalign`) and the Hydra entry
point say the same about the same setting."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from aligners.config_checks import (
    Rule,
    check_config,
    check_value,
    from_config,
    setting,
    task_configs,
)
from aligners.errors import AlignersInputError
from aligners.run import tasks
from tests.test_configs import _compose, _plain

TASKS = tasks()

ROOT = Path(__file__).resolve().parents[1]

# task -> (experiment, override, the exact error)
BAD = {
    "baseline": ("diagonal_baseline", "data.lenient=3",
                 "data.lenient must be true or false; got 3"),
    "hmm": ("default", "model.p0=1.5", "model.p0 must be a number in [0, 1); got 1.5"),
    "mono": ("tokencrf_msr06", "training.lr=0",
                    "training.lr must be a number > 0; got 0"),
    "reorder": ("reorder_dev", "model.primal.sigma2=-1.0",
                "model.primal.sigma2 must be a number > 0; got -1.0"),
    "lclr": ("lclr_paraphrase", "model.cv_folds=1",
             "model.cv_folds must be an integer >= 2; got 1"),
    "gappy-hsmm": ("bansal2011_hansards_20k", "model.phrasal.max_phrase_len=17",
                      "model.phrasal.max_phrase_len must be an integer in [1, 16]; got 17"),
    "bayesian": ("efmaral_hansards_20k", "model.p_null=1.0",
                    "model.p_null must be a number in [0, 1); got 1.0"),
}


def test_every_task_has_rules():
    assert set(BAD) == set(TASKS)
    for task in TASKS:
        assert task_configs().get(task), task


@pytest.mark.parametrize("task", sorted(BAD))
def test_a_bad_value_is_one_exact_line(task, tmp_path):
    experiment, override, message = BAD[task]
    cfg = _plain(_compose("train", [f"experiment={experiment}"], tmp_path))
    assert cfg.task == task
    check_config(cfg, task)  # the shipped values pass
    bad = _plain(_compose("train", [f"experiment={experiment}", override], tmp_path))
    with pytest.raises(AlignersInputError) as err:
        check_config(bad, task)
    assert str(err.value) == message


@pytest.mark.parametrize("override,message", [
    ("model.dual.eps=[0.1,-1]", "model.dual.eps must be a number >= 0, or a list of such "
                                "values; got -1"),
    ("model.dual.eps=0.5", None),  # one tolerance: one model
    ("model.naive_bayes.inference=[map,mle]", "model.naive_bayes.inference must be one of "
                                              "map, bayes, or a list of such values; got 'mle'"),
    ("model.extract.mode=xyz", "model.extract.mode must be one of wbe, phrase, hier; got 'xyz'"),
    ("evaluate_on=test", "evaluate_on must be one of heldout, dev; got 'test'"),
    ("data.heldout_fraction=0", "data.heldout_fraction must be a number in (0, 1); got 0"),
])
def test_reorder_rules(override, message, tmp_path):
    cfg = _plain(_compose("train", ["experiment=reorder_dev", override], tmp_path))
    if message is None:
        check_config(cfg, "reorder")
        return
    with pytest.raises(AlignersInputError) as err:
        check_config(cfg, "reorder")
    assert str(err.value) == message


@dataclass
class _Sub:
    k: int = setting(2, Rule("int", lo=1))


@dataclass
class _Top:
    name: str = setting(rule=Rule("str", choices=("a", "b")))
    sub: _Sub = setting(factory=_Sub)


def test_from_config_refuses_unknown_and_missing_keys_and_fills_defaults():
    got = from_config(_Top, {"name": "a"}, "model")
    assert got.name == "a" and got.sub.k == 2
    assert from_config(_Top, {"name": "b", "sub": {"k": 5}}).sub.k == 5
    with pytest.raises(AlignersInputError, match=r"^model\.sub\.x is not a setting of "
                                                 r"model\.sub \(_Sub\); expected one of k$"):
        from_config(_Top, {"name": "a", "sub": {"x": 1}}, "model")
    with pytest.raises(AlignersInputError, match=r"^model\.name is required \(one of a, b\)$"):
        from_config(_Top, {}, "model")
    with pytest.raises(AlignersInputError, match=r"^model\.sub\.k must be an integer >= 1; "
                                                 r"got 0$"):
        from_config(_Top, {"name": "a", "sub": {"k": 0}}, "model")
    assert from_config(_Top, {"name": "a", "other": 1}, "", strict=False).name == "a"


def test_rule_kinds():
    assert check_value("x", None, Rule("int", lo=0, each=True, nullable=True)) is None
    assert check_value("x", 2, Rule("int", choices=(1, 2, 3))) == 2
    with pytest.raises(AlignersInputError, match="^x must be one of 1, 2, 3; got 4$"):
        check_value("x", 4, Rule("int", choices=(1, 2, 3)))
    with pytest.raises(AlignersInputError, match="^x must be true or false; got 1$"):
        check_value("x", 1, Rule("bool"))
    with pytest.raises(AlignersInputError, match="nan"):
        check_value("x", float("nan"), Rule("float", lo=0, listable=True))


def _run(argv, cwd, stdin=""):
    return subprocess.run([sys.executable, *argv], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=300)


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_cli_and_hydra_say_the_same(tmp_path):
    """The same bad value of the same setting, from `aligners reorder train` / `aligners
    monoalign` and from `train.py`: one line, exit 2, the same message after the name."""
    for name, lines in (("s", ["a b"]), ("t", ["x y"]), ("a", ["0-0 1-1"])):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    cli = _run(["-m", "aligners.cli", "reorder", "train", "-s", str(tmp_path / "s"),
                "-t", str(tmp_path / "t"), "-a", str(tmp_path / "a"), "-o",
                str(tmp_path / "m"), "--model", "primal", "--sigma2", "-1"], ROOT)
    hydra = _run([str(ROOT / "train.py"), "experiment=reorder_dev", "model.primal.sigma2=-1.0",
                  f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    assert cli.returncode == hydra.returncode == 2
    assert _one_line(cli.stderr) == ("aligners reorder: error: --sigma2 must be a number > 0; "
                                     "got -1.0")
    assert _one_line(hydra.stderr) == ("train.py: error: model.primal.sigma2 must be a number "
                                       "> 0; got -1.0")
    (tmp_path / "model").mkdir()
    cli = _run(["-m", "aligners.cli", "monoalign", "--model", str(tmp_path / "model"),
                "--threshold", "1.5"], ROOT, stdin="a b ||| a b\n")
    hydra = _run([str(ROOT / "train.py"), "experiment=tokencrf_msr06", "model.threshold=1.5",
                  f"hydra.run.dir={tmp_path / 'run2'}"], tmp_path)
    assert cli.returncode == hydra.returncode == 2
    assert _one_line(cli.stderr) == ("aligners monoalign: error: --threshold must be a number "
                                     "in [0, 1); got 1.5")
    assert _one_line(hydra.stderr) == ("train.py: error: model.threshold must be a number in "
                                       "[0, 1); got 1.5")
    assert not (tmp_path / "run").exists() and not (tmp_path / "run2").exists()
