"""Issue 12 item 13: the package works outside its checkout.

The configs ship as package data (`aligners/configs` links to the top-level `configs/`),
`python -m aligners.train` / `aligners train` find them from any folder, and a missing data
folder is one clear line (exit 2). A wheel is built (no install: that needs the network) and
its contents checked; the full install into a fresh venv was verified by hand (see README).
"""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import aligners.data.paths as paths
from aligners.cli import main as cli_main
from aligners.errors import AlignersInputError

ROOT = Path(__file__).resolve().parents[1]


def _configs(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*.yaml")}


def test_package_configs_are_the_top_level_configs():
    top, pkg = ROOT / "configs", ROOT / "aligners" / "configs"
    assert pkg.is_dir() and _configs(top) and _configs(pkg) == _configs(top)
    assert pkg.resolve() == top.resolve()  # one source of truth


def test_package_data_patterns_cover_every_config():
    import tomllib
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["aligners"]
    pkg = ROOT / "aligners"
    covered = {str(p.relative_to(pkg)) for pat in patterns for p in pkg.glob(pat)}
    assert {f"configs/{c}" for c in _configs(ROOT / "configs")} <= covered


def test_data_root_env_checkout_and_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("ALIGNERS_DATA", str(tmp_path))
    assert paths.data_root() == tmp_path
    monkeypatch.delenv("ALIGNERS_DATA")
    assert paths.in_checkout()
    assert paths.data_root() == ROOT.parent / "shared" / "data"
    # installed (site-packages): no checkout around the package -> ./shared/data
    monkeypatch.setattr(paths, "_REPO", tmp_path / "site-packages")
    monkeypatch.chdir(tmp_path)
    assert not paths.in_checkout()
    assert paths.data_root() == tmp_path / "shared" / "data"


def test_missing_data_folder_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("ALIGNERS_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(AlignersInputError, match="ALIGNERS_DATA") as err:
        paths.dataset_dir("hansards-enfr-naacl2003")
    assert isinstance(err.value, FileNotFoundError) and "\n" not in str(err.value)
    monkeypatch.setenv("ALIGNERS_DATA", str(tmp_path))
    with pytest.raises(paths.DataFolderMissing, match="dataset folder .*hansards"):
        paths.dataset_dir("hansards-enfr-naacl2003")


def test_cli_dataset_without_data_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ALIGNERS_DATA", str(tmp_path / "nowhere"))
    assert cli_main(["evaluate", "--dataset", "hansards-enfr", "--test", "/dev/null"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aligners evaluate: error: data folder") and "\n" not in err


def test_applications_missing_model_exits_2(monkeypatch, capsys, tmp_path):
    from aligners import applications
    monkeypatch.setattr(sys, "argv", ["x", "--model", str(tmp_path / "nope")])
    assert applications._cli() == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aligners.applications: error:") and "\n" not in err


def test_train_list_names_the_runnable_experiments(capsys, tmp_path):
    """Listed iff runnable: an experiment whose composed config selects a data set; a base
    config (yao2013_common, neural_common: settings others include) is left out."""
    from tests.test_configs import _compose

    assert cli_main(["train", "--list"]) == 0
    names = capsys.readouterr().out.split()
    shipped = sorted(p.stem for p in (ROOT / "configs" / "experiment").glob("*.yaml"))
    assert names == sorted(names) and set(names) < set(shipped)
    assert "default" in names and not {"yao2013_common", "neural_common"} & set(names)
    for name in shipped:
        cfg = _compose("train", [f"experiment={name}"], tmp_path)
        assert bool(cfg.get("data")) == (name in names), name


def test_python_m_train_finds_configs_outside_the_checkout(tmp_path):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "aligners.train", "--cfg", "job",
                          "experiment=diagonal_baseline"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "task: baseline" in out.stdout
    assert not (tmp_path / "outputs").exists()  # --cfg job runs nothing


@pytest.mark.slow
def test_wheel_ships_configs_and_entry_points(tmp_path):
    import shutil

    src = tmp_path / "src"  # build from a copy: no build/ or egg-info left in the checkout
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "outputs", "multirun", "build", "*.egg-info", "__pycache__", ".*_cache"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip()[-200:]}")
    (wheel,) = tmp_path.glob("aligners-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {f"aligners/configs/{c}" for c in _configs(ROOT / "configs")}
    assert want <= names
    assert {"aligners/train.py", "aligners/evaluate.py", "aligners/commands/train.py"} <= names
