"""Every config file composes, and every trainer/logger/callbacks/launcher config instantiates.

Written generically: experiments, trainers, loggers, ... added later by anyone are picked up
from the `configs/` folder automatically.
"""

import importlib
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import OmegaConf, open_dict

from aligners.run import tasks

TASKS = tasks()

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
ROOTS = ("train", "evaluate")


def _names(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


def _compose(root: str, overrides: list[str], output_dir: Path):
    """Compose like `@hydra.main` does, with Hydra's output dir set to `output_dir`."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name=root, overrides=overrides, return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(output_dir)
        cfg.hydra.job.num = 0
    HydraConfig.instance().set_config(cfg)
    return cfg


def _plain(cfg):
    """Resolved config without the `hydra` node (what the task functions see)."""
    out = OmegaConf.to_container(cfg, resolve=True)
    out.pop("hydra", None)
    return OmegaConf.create(out)


def test_groups_exist():
    for group in ("data", "model", "trainer", "logger", "callbacks", "experiment"):
        assert (CONFIGS / group).is_dir(), group
    assert "slurm" in _names("hydra/launcher")
    assert "default" in _names("experiment")


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("experiment", _names("experiment"))
def test_every_experiment_composes(root, experiment, tmp_path):
    cfg = _plain(_compose(root, [f"experiment={experiment}"], tmp_path))
    assert cfg.task in TASKS, f"experiment {experiment}: task {cfg.task!r} not in run.TASKS"
    module = importlib.import_module(f"aligners.training.{TASKS[cfg.task]}")
    assert callable(module.train) and callable(module.evaluate)
    assert cfg.paths.output_dir == str(tmp_path)
    assert cfg.trainer.default_root_dir == str(tmp_path)  # Hydra's output dir -> Trainer


@pytest.mark.parametrize("group", ("data", "model"))
def test_every_data_and_model_config_composes(group, tmp_path):
    for name in _names(group):
        cfg = _plain(_compose("train", [f"{group}={name}"], tmp_path))
        assert cfg[group] is not None, (group, name)


def _cpu_safe(trainer_cfg):
    import torch

    wants_gpu = trainer_cfg.get("accelerator") in ("gpu", "cuda") or trainer_cfg.get(
        "devices"
    ) in (-1, "auto")
    if wants_gpu and not torch.cuda.is_available():
        trainer_cfg.accelerator = "cpu"
        trainer_cfg.devices = 1
    return trainer_cfg


@pytest.mark.parametrize("name", _names("trainer"))
def test_every_trainer_instantiates(name, tmp_path):
    import pytorch_lightning as pl

    cfg = _plain(_compose("train", [f"trainer={name}"], tmp_path))
    trainer = instantiate(_cpu_safe(cfg.trainer), logger=False, enable_progress_bar=False)
    assert isinstance(trainer, pl.Trainer)
    assert Path(trainer.default_root_dir) == tmp_path


@pytest.mark.parametrize("name", _names("logger"))
def test_every_logger_instantiates(name, tmp_path):
    from pytorch_lightning.loggers import Logger

    cfg = _plain(_compose("train", [f"logger={name}"], tmp_path))
    loggers = cfg.logger if "_target_" not in cfg.logger else {"logger": cfg.logger}
    for conf in loggers.values():
        assert isinstance(instantiate(conf), Logger)


@pytest.mark.parametrize("name", _names("callbacks"))
def test_every_callbacks_config_instantiates(name, tmp_path):
    from pytorch_lightning.callbacks import Callback

    cfg = _plain(_compose("train", [f"callbacks={name}"], tmp_path))
    for key, conf in cfg.callbacks.items():
        cb = instantiate(conf)
        assert isinstance(cb, Callback), key
        if hasattr(cb, "dirpath") and cb.dirpath is not None:
            assert str(cb.dirpath).startswith(str(tmp_path))


@pytest.mark.parametrize("name", _names("hydra/launcher"))
def test_every_launcher_composes_and_instantiates(name, tmp_path):
    cfg = _compose("train", [f"hydra/launcher={name}"], tmp_path)
    launcher = cfg.hydra.launcher
    assert "_target_" in launcher
    obj = instantiate(launcher)  # building the launcher submits nothing
    assert type(obj).__name__.endswith("Launcher")


@pytest.mark.parametrize("root", ROOTS)
def test_run_dir_is_unique_per_run_and_names_the_experiment(root, tmp_path):
    """Issue 12 item 8: runs started in the same second never share a folder."""
    import os

    cfg = _compose(root, ["experiment=diagonal_baseline"], tmp_path)
    run_dir = OmegaConf.to_container(cfg.hydra.run, resolve=True)["dir"]
    parts = run_dir.split("/")
    assert parts[:2] == ["outputs", "diagonal_baseline"], run_dir
    stamp, pid = parts[2].rsplit("-", 1)
    assert pid == str(os.getpid())
    assert len(stamp.split("_")[-1].split("-")[-1]) == 6  # microseconds
