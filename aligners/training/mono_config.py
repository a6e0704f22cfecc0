"""Config checks of `task: monolingual` and its ensemble members.

`check_cfg(cfg)`: the decoding, training and data values the task reads, one
AlignersInputError line per problem. `member_cfgs(cfg)`: the configs of the models one run
trains: `cfg` itself, or with `training.members` (a list of two or more dicts of training.*
overrides, e.g. `[{nonident_fn_cost: 3}, {nonident_fn_cost: 8}]`) one merged config per
member, each checked; the run then saves their ensemble (`aligners.models.mono.ensemble`).
Cost: O(config size).
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from aligners.errors import AlignersInputError
from aligners.models.mono.aligner import DIRECTIONS, check_decode
from aligners.models.mono.combine import check_combine

__all__ = ["check_cfg", "member_cfgs"]


def check_cfg(cfg: DictConfig) -> None:
    """Every model.* decoding and training.* / data.* value the task reads is valid (else one
    AlignersInputError line); `training.members` overrides are checked by `member_cfgs`."""
    t = cfg.training
    check_decode(cfg.model.get("decode", "viterbi"), cfg.model.get("threshold", 0.5))
    check_combine(cfg.model.get("combine", "none") or "none")
    if cfg.model.get("encoder_precision") is not None:  # neural, decoding only
        from aligners.features.embedding import check_precision
        check_precision(cfg.model.encoder_precision)
    for key in ("batch_size", "decode_batch", "threads", "epochs", "max_iter", "max_train_len"):
        if t.get(key) is not None and (not isinstance(t[key], int)
                                       or isinstance(t[key], bool) or t[key] < 1):
            raise AlignersInputError(f"training.{key} must be an integer >= 1, got {t[key]!r}")
    for key in ("lr", "sparse_lr", "encoder_lr"):
        if key in t and not float(t[key]) > 0:
            raise AlignersInputError(f"training.{key} must be > 0, got {t[key]!r}")
    for key in ("l2", "cost_weight", "fp_cost", "fn_cost", "nonident_fn_cost"):
        if key in t and not float(t[key]) >= 0:
            raise AlignersInputError(f"training.{key} must be >= 0, got {t[key]!r}")
    if t.gold_links not in ("possible", "sure"):
        raise AlignersInputError(f"training.gold_links must be possible or sure, "
                                 f"got {t.gold_links!r}")
    dirs = list(t.directions)
    if not dirs or any(d not in DIRECTIONS for d in dirs) or len(set(dirs)) != len(dirs):
        raise AlignersInputError(f"training.directions must be a non-empty list of distinct "
                                 f"{list(DIRECTIONS)}, got {dirs}")
    sel = t.get("select")
    if sel is not None and sel != "dev" and (not isinstance(sel, int) or isinstance(sel, bool)
                                             or sel < 1):
        raise AlignersInputError(f"training.select must be null, 'dev' (the dev split) or an "
                                 f"integer N >= 1 (the last N training pairs), got {sel!r}")
    if sel == "dev" and not (cfg.data.get("dev_split") or cfg.data.get("dev_path")):
        raise AlignersInputError("training.select=dev needs data.dev_split or data.dev_path")
    for key in ("train_limit", "test_limit", "dev_holdout"):
        v = cfg.data.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise AlignersInputError(f"data.{key} must be null or an integer >= 1, got {v!r}")


def member_cfgs(cfg: DictConfig) -> list[DictConfig]:
    """[cfg] without `training.members`; else one checked config per member: `cfg` with the
    member's training.* overrides merged in (members: null). Unknown keys, nested members or
    fewer than two members: AlignersInputError."""
    members = cfg.training.get("members")
    if not members:
        return [cfg]
    if not OmegaConf.is_list(members) or len(members) < 2:
        raise AlignersInputError("training.members must be null or a list of two or more "
                                 "dicts of training.* overrides (one per ensemble member)")
    out = []
    for k, over in enumerate(members):
        if not OmegaConf.is_dict(over):
            raise AlignersInputError(f"training.members[{k}] must be a dict of training.* "
                                     f"overrides, got {over!r}")
        unknown = sorted(set(over) - (set(cfg.training) - {"members"}))
        if unknown:
            raise AlignersInputError(f"training.members[{k}] sets unknown training keys "
                                     f"{unknown}")
        member = OmegaConf.merge(cfg, {"training": {**OmegaConf.to_container(over),
                                                    "members": None}})
        check_cfg(member)
        out.append(member)
    return out
