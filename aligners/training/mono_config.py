"""Settings and config checks of `task: monolingual` and its ensemble members.

`settings(cfg)` reads the task's `model`, `training` and `data` sections over their defaults
and value rules (`aligners.models.mono.config`: MonoConfig, MonoTraining, MonoData; unknown
keys and bad values: one AlignersInputError line). `check_cfg(cfg)` adds what one rule
cannot say (directions, `training.select`). `member_cfgs(cfg)`: the configs of the models
one run trains: `cfg` itself, or with `training.members` (a list of two or more dicts of
training.* overrides, e.g. `[{nonident_fn_cost: 3}, {nonident_fn_cost: 8, model:
{max_src_len: 4}}]`, a member's `model` dict overriding model.*) one merged config per
member, each checked; the run then saves their ensemble (`aligners.models.mono.ensemble`).
Cost: O(config size).
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from aligners.config_checks import from_config
from aligners.errors import AlignersInputError
from aligners.models.mono.config import MonoConfig, MonoData, MonoTraining

__all__ = ["settings", "check_cfg", "member_cfgs"]

# model.* keys one member may not override: the kind, and how the ensemble decodes
_ENSEMBLE_MODEL_KEYS = {"kind", "decode", "threshold", "combine", "encoder_precision"}


def settings(cfg: DictConfig) -> tuple[MonoConfig, MonoTraining, MonoData]:
    """The model, training and data settings of `cfg` over their defaults (checked)."""
    return (from_config(MonoConfig, cfg.model, "model"),
            from_config(MonoTraining, cfg.get("training"), "training"),
            from_config(MonoData, cfg.data, "data"))


def check_cfg(cfg: DictConfig) -> tuple[MonoConfig, MonoTraining, MonoData]:
    """`settings(cfg)`, and what no single rule says (else one AlignersInputError line);
    `training.members` overrides are checked by `member_cfgs`."""
    m, t, d = settings(cfg)
    if not t.directions or len(set(t.directions)) != len(t.directions):
        raise AlignersInputError(f"training.directions must be a non-empty list of distinct "
                                 f"['s2t', 't2s'], got {t.directions}")
    sel = t.select
    if sel is not None and sel != "dev" and (not isinstance(sel, int) or isinstance(sel, bool)
                                             or sel < 1):
        raise AlignersInputError(f"training.select must be null, 'dev' (the dev split) or an "
                                 f"integer N >= 1 (the last N training pairs), got {sel!r}")
    if sel == "dev" and not (d.dev_split or d.dev_path):
        raise AlignersInputError("training.select=dev needs data.dev_split or data.dev_path")
    return m, t, d


def member_cfgs(cfg: DictConfig) -> list[DictConfig]:
    """[cfg] without `training.members`; else one checked config per member: `cfg` with the
    member's training.* overrides merged in (members: null) and, under the member's `model`
    key, model.* overrides (the lattice and encoder settings; not `kind`, nor the decoding
    keys, which belong to the whole ensemble). Unknown keys, nested members or fewer than two
    members: AlignersInputError."""
    members = cfg.training.get("members")
    if not members:
        return [cfg]
    if not OmegaConf.is_list(members) or len(members) < 2:
        raise AlignersInputError("training.members must be null or a list of two or more "
                                 "dicts of training.* overrides (one per ensemble member)")
    out, fields = [], MonoConfig.__dataclass_fields__
    for k, over in enumerate(members):
        if not OmegaConf.is_dict(over):
            raise AlignersInputError(f"training.members[{k}] must be a dict of training.* "
                                     f"overrides, got {over!r}")
        over = OmegaConf.to_container(over)
        model = over.pop("model", None) or {}
        unknown = sorted(set(over) - (set(cfg.training) - {"members"}))
        if unknown:
            raise AlignersInputError(f"training.members[{k}] sets unknown training keys "
                                     f"{unknown}")
        bad = sorted(set(model) - (set(fields) - _ENSEMBLE_MODEL_KEYS)) if isinstance(
            model, dict) else [model]
        if bad:
            raise AlignersInputError(f"training.members[{k}].model may override the model's "
                                     f"own settings, not {bad}")
        member = OmegaConf.merge(cfg, {"training": {**over, "members": None}, "model": model})
        check_cfg(member)
        out.append(member)
    return out
