"""The run.py contract for every task: `evaluate(cfg)` reads `cfg.ckpt_path`; a bad
checkpoint, a missing data.test_path or an absurd config value is one clean error; the
Hydra entry points print one line, exit 2 and leave no output folder; two runs never share
an output folder."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf, open_dict

from aligners import families
from aligners.errors import AlignersInputError
from aligners.export import write_model
from aligners.run import check, evaluate, tasks
from tests.test_configs import CONFIGS, _compose, _names, _plain

TASKS = tasks()

ROOT = Path(__file__).resolve().parents[1]


_PREFERRED = {"baseline": "diagonal_baseline", "hmm": "default",
              "reorder": "reorder_emnlp_table2", "mono": "tokencrf_msr06"}


def _experiment_for(task: str, tmp_path) -> str:
    """An experiment file whose task is `task` (a known one first, else a search)."""
    names = _names("experiment")
    first = [_PREFERRED[task]] if _PREFERRED.get(task) in names else []
    for name in first + names:
        if _plain(_compose("evaluate", [f"experiment={name}"], tmp_path)).task == task:
            return name
    pytest.skip(f"no experiment runs task {task}")


def _cfg(task, tmp_path, **over):
    cfg = _plain(_compose("evaluate", [f"experiment={_experiment_for(task, tmp_path)}"],
                          tmp_path / "out"))
    with open_dict(cfg):
        for k, v in over.items():
            OmegaConf.update(cfg, k, v, force_add=True)
    return cfg


def _bad_checkpoints(tmp_path) -> dict[str, Path]:
    empty = tmp_path / "empty"
    empty.mkdir()
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "config.json").write_text("{not json")
    (corrupt / "model.safetensors").write_bytes(b"\0" * 16)
    unknown = write_model(tmp_path / "unknown", kind="no_such_kind",
                          tensors={"w": torch.zeros(1)}, config={})
    return {"missing": tmp_path / "nope", "missing_file": tmp_path / "nope" / "config.json",
            "empty": empty, "corrupt": corrupt, "corrupt_file": corrupt / "config.json",
            "unknown_kind": unknown}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_evaluate_with_a_bad_ckpt_path_fails_cleanly(task, tmp_path):
    for name, path in _bad_checkpoints(tmp_path).items():
        cfg = _cfg(task, tmp_path, ckpt_path=str(path))
        with pytest.raises(AlignersInputError) as err:
            evaluate(cfg)
        assert "\n" not in str(err.value), (task, name)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_model_of_another_task_is_refused(task, tmp_path, monkeypatch):
    """Wrong kind: the folder is valid, but written for another task (or family)."""
    fam = families.by_task(task)
    kinds = fam.all_kinds if fam is not None and fam.evaluates else ()
    if task == "reorder":
        fake = families.Family(name="other_family", summary="", verb="none",
                               loader="aligners.export:load")
        registered = families._registered()
        monkeypatch.setattr(families, "_registered", lambda: (*registered, fake))
        kind = "other_family"
    else:
        kind = "reorder-lexical"  # a reordering model, claimed by the reorder task
    assert kind not in (kinds or ())
    other = write_model(tmp_path / "other", kind=kind, tensors={"w": torch.zeros(1)}, config={})
    with pytest.raises(AlignersInputError,
                       match="has no model to load|cannot be evaluated|belongs to task"):
        evaluate(_cfg(task, tmp_path, ckpt_path=str(other)))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_evaluate_without_ckpt_path_says_so(task, tmp_path):
    fam = families.by_task(task)
    if fam is None or not fam.evaluates:
        pytest.skip(f"task {task} has no model: evaluate runs without ckpt_path")
    with pytest.raises(AlignersInputError, match="evaluate needs ckpt_path="):
        evaluate(_cfg(task, tmp_path))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_missing_test_path_fails_cleanly(task, tmp_path):
    cfg = _cfg(task, tmp_path, **{"data.test_path": str(tmp_path / "no.json")})
    with pytest.raises(AlignersInputError, match="data.test_path"):
        check(cfg)


@pytest.mark.parametrize("override, key", [
    ("threads=0", "threads"), ("seed=abc", "seed"), ("data.train_limit=-5", "data.train_limit"),
    ("model.primal.epochs=0", "model.primal.epochs"), ("model.dual.eps=[0.1,-1]",
                                                       "model.dual.eps"),
    ("model.dual.max_iter=2.5", "model.dual.max_iter"),
    ("model.naive_bayes.mi_fractions=[1.5]", "model.naive_bayes.mi_fractions"),
    ("model.features.min_count=-3", "model.features.min_count"),
    ("data.heldout_fraction=1", "data.heldout_fraction"),
])
def test_absurd_reorder_config_values_are_refused(override, key, tmp_path):
    cfg = _plain(_compose("train", ["experiment=reorder_emnlp_table2", override], tmp_path))
    with pytest.raises(AlignersInputError, match=f"^{key} must be"):
        check(cfg)


def test_word_config_rules(tmp_path):
    for override, key in (("model.p0=5", "model.p0"), ("model.hmm_iterations=-2",
                                                       "model.hmm_iterations"),
                          ("model.hmm_iterations=abc", "model.hmm_iterations"),
                          ("data.train_limit=-1", "data.train_limit")):
        cfg = _plain(_compose("train", ["experiment=default", override], tmp_path))
        with pytest.raises(AlignersInputError, match=f"^{key} must be"):
            check(cfg)
    check(_plain(_compose("train", ["experiment=default"], tmp_path)))  # the defaults pass


def _run(script, args, cwd):
    return subprocess.run([sys.executable, str(ROOT / script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_entry_points_print_one_line_exit_2_and_leave_no_folder(tmp_path):
    for script, args in (
        ("evaluate.py", ["experiment=reorder_emnlp_table2", f"ckpt_path={tmp_path / 'nope'}"]),
        ("train.py", ["experiment=diagonal_baseline", "threads=0"]),
        ("train.py", ["experiment=default", "model.p00=0.1"]),  # misspelt: Hydra's error
    ):
        res = _run(script, args, tmp_path)
        assert res.returncode == 2, res.stderr
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith(f"{script}: error: "), res.stderr
        assert "Traceback" not in res.stderr
        assert not (tmp_path / "outputs").exists() or not any(
            (tmp_path / "outputs").rglob(".hydra")), "a failed run left its output folder"


def test_an_earlier_run_under_outputs_does_not_stop_the_next(tmp_path, monkeypatch):
    from aligners.launch import check_argv

    (tmp_path / "outputs" / "default" / "run").mkdir(parents=True)
    (tmp_path / "outputs" / "default" / "run" / "metrics.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    check_argv(["experiment=default"])  # Hydra's default folder: a new one under outputs/
    with pytest.raises(AlignersInputError, match="not empty and not a run folder"):
        check_argv(["experiment=default", "hydra.run.dir=outputs"])


def test_two_runs_started_together_get_two_folders(tmp_path):
    procs = [subprocess.Popen([sys.executable, str(ROOT / "train.py"),
                               "experiment=diagonal_baseline"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    runs = sorted((tmp_path / "outputs" / "diagonal_baseline").iterdir())
    assert len(runs) == 2
    assert all((r / "metrics.json").is_file() for r in runs)
    assert str(CONFIGS)  # the configs above are the ones these scripts used


def test_benchmark_scripts_help_and_missing_eflomal(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mono.py"), "--help"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "--experiment" in res.stdout, res.stderr
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mono.py"), "--run",
                          str(tmp_path / "none"), "--no-save"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2 and "not a finished run folder" in res.stderr
    assert "Traceback" not in res.stderr
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {"PATH": str(empty_bin), "TMPDIR": str(tmp_path / "tmp"),
           "ALIGNERS_EFLOMAL": "eflomal-align"}  # (not the venv's, which may be installed)
    (tmp_path / "tmp").mkdir()
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "align_vs_eflomal.py"),
                          "--pairs", "10"], capture_output=True, text=True, timeout=120,
                         env=env)
    assert res.returncode == 2 and "eflomal-align not found" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert not list((tmp_path / "tmp").iterdir())  # no temporary folder left behind
