"""`task: monolingual`: train the token CRF / semi-Markov phrasal CRF aligners (Yao et al. 2013).

`python train.py experiment=yao2013_msr06_phrase` featurises the training pairs (the registry
dataset `cfg.data.name`'s train split, or the user's own annotated file `data.train_path=`),
fits one model per direction in `cfg.training.directions` with softmax-margin + L2 (L-BFGS full
batch as the paper, or Adam) under the one Trainer builder (`aligners.training.trainer`:
`cfg.trainer`, `cfg.logger`, `cfg.callbacks`), saves ONE model folder `<run>/model`
(`aligners.export`, both directions), the learnt weights by name in `<run>/weights.json`,
decodes the evaluation splits (test split or `data.test_path`; `data.dev_path` /
`data.dev_holdout` add a dev split) in each direction and their union (and `model.combine`'s
combination of the two, e.g. grow-diag, when set), writes the predictions as Pharaoh files
and `<run>/metrics.json` (`aligners.metrics.write_metrics_json`: split -> metric -> value).
`python evaluate.py experiment=... ckpt_path=<run>/model [data.test_path=X.json]` scores a saved
model folder the same way. `settings`, `check_cfg`, `member_cfgs`: the task's config sections
over their defaults and value rules (`aligners.models.mono.config`). Inference (`aligners
monoalign`, `aligners.load`) never imports this module.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf

from aligners.config_checks import from_config
from aligners.data.datasets import load
from aligners.data.jacana import read_annotated
from aligners.data.pharaoh import link_line
from aligners.data.types import AlignedPair
from aligners.errors import AlignersInputError
from aligners.metrics import evaluate_alignments, format_report, write_metrics_json
from aligners.models.mono.aligner import (
    DIRECTIONS,
    MonoAligner,
    chunks,
    featurise,
    flip,
    shared_embedder,
)
from aligners.models.mono.combine import check_combine, combine_links
from aligners.models.mono.config import MonoConfig, MonoData, MonoTraining
from aligners.models.mono.ensemble import MonoEnsemble
from aligners.outputs import write_lines
from aligners.training.baseline import flatten_numbers
from aligners.training.lit_mono import LitMonoAligner
from aligners.training.trainer import build_trainer

__all__ = ["ENSEMBLES", "LitMonoAligner", "train", "evaluate", "settings", "check_cfg",
           "member_cfgs"]

ENSEMBLES = True  # ckpt_path=[A, B, ...]: evaluate the ensemble of saved models
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


def _fit(cfg: DictConfig, pairs: list[AlignedPair], direction: str, embedder, n_directions=1,
         select_pairs: list[AlignedPair] | None = None):
    m, t, _ = settings(cfg)
    lit = LitMonoAligner(m, t, n_pairs=len(pairs))
    t0 = time.time()
    examples = featurise(pairs, lit.model, direction=direction, gold_links=t.gold_links,
                         embedder=embedder)
    if select_pairs:  # the examples and their gold links in the model's order
        lit.select = (featurise(select_pairs, lit.model, direction=direction,
                                gold_links=t.gold_links, embedder=embedder),
                      [(flip(p) if direction == "t2s" else p).alignment for p in select_pairs])
    t_feat = time.time() - t0
    batches, _ = chunks(examples, max_tgt_len=lit.model.max_tgt_len, batch_size=t.batch_size,
                        cost=(t.fp_cost, t.fn_cost, float(t.nonident_fn_cost)))
    data = [batches] if t.optimizer == "lbfgs" else [[b] for b in batches]
    if t.optimizer == "adamw" and t.lr_decay:
        lit.hparams.total_steps = len(data) * int(t.epochs)
    loader = torch.utils.data.DataLoader(data, batch_size=None, collate_fn=list,  # items: lists
                                         shuffle=t.optimizer != "lbfgs")
    # L-BFGS takes one (full-batch) step per epoch: a logging interval longer than an epoch
    # would log nothing (and Lightning warns about it), so cap it at the epoch length
    every = max(1, min(int(cfg.trainer.get("log_every_n_steps", 50)), len(data)))
    trainer = build_trainer(cfg, max_epochs=t.epochs,  # two directions: checkpoints apart
                            subdir=direction if n_directions > 1 else None,
                            limit_val_batches=0, log_every_n_steps=every,
                            enable_model_summary=False)
    t0 = time.time()
    trainer.fit(lit, loader)
    fit_s = time.time() - t0
    timing = {"featurise_s": round(t_feat, 1), "fit_s": round(fit_s, 1),
              "epoch_s": round(fit_s / max(t.epochs, 1), 1)}
    if lit.best_state is not None:  # the epoch chosen on the selection (dev) pairs
        lit.model.load_state_dict(lit.best_state)
        timing.update({"best_epoch": lit.best_epoch, "select_f1": round(lit.best_f1, 5)})
        timing.update({f"select_f1_epoch{n}": v for n, v in enumerate(lit.select_log)})
        timing.update({f"select_nonident_f1_epoch{n}": v
                       for n, v in enumerate(lit.select_nonident)})
    return lit.model.cpu().eval(), timing


def _data_name(cfg: DictConfig) -> str:
    """What the model was trained on: the registry name or the user's file(s)."""
    d = settings(cfg)[2]
    spec = d.train_path or str(d.name)
    return spec if isinstance(spec, str) else ",".join(str(x) for x in spec)


def _embedder(cfg: DictConfig):
    return shared_embedder() if settings(cfg)[0].embedding else None


def _train_pairs(cfg: DictConfig) -> list[AlignedPair]:
    _, t, d = settings(cfg)
    pairs, held = _train_split(d)
    if d.dev_holdout and not pairs:  # tuning runs: the last N training pairs are held out
        raise AlignersInputError(f"data.dev_holdout={d.dev_holdout} leaves no training "
                                 f"pairs (there are {len(held)})")
    sel = t.select
    if isinstance(sel, int) and not isinstance(sel, bool):  # epoch selection on held-out pairs
        if sel >= len(pairs):
            raise AlignersInputError(f"training.select={sel} leaves no training pairs "
                                     f"(there are {len(pairs)})")
        pairs = pairs[:-sel]
    if d.train_limit:
        pairs = pairs[: int(d.train_limit)]
    cap = t.max_train_len
    if cap:  # training cost grows as I * (Lt * J)^2: leave the longest pairs out of training
        pairs = [p for p in pairs if max(len(p.src), len(p.tgt)) <= int(cap)]
    if not pairs:
        raise AlignersInputError("no training pairs")
    return pairs


def _train_split(d) -> tuple[list[AlignedPair], list[AlignedPair]]:
    """(every training pair but the last data.dev_holdout ones, those) of `MonoData` d:
    data.train_path, else the train split."""
    pairs = (read_annotated(d.train_path, what="data.train_path") if d.train_path
             else load(d.name, d.train_split))
    n = int(d.dev_holdout or 0)
    return (pairs[:-n], pairs[-n:]) if n else (pairs, [])


def _dev_split(d) -> list[AlignedPair] | None:
    """The dev pairs of `MonoData` d: data.dev_path, else the dev split (None: neither)."""
    if d.dev_path:
        return read_annotated(d.dev_path, what="data.dev_path")
    return load(d.name, d.dev_split) if d.dev_split else None


def _eval_splits(cfg: DictConfig) -> dict[str, list[AlignedPair]]:
    """split name -> gold pairs: `dev` (data.dev_path, or the data.dev_holdout pairs, which
    replace the test split in tuning runs) and `test` (data.test_path or the test split)."""
    d = settings(cfg)[2]
    limit = int(d.test_limit) if d.test_limit else None
    if d.dev_holdout:
        return {"dev": _train_split(d)[1][:limit]}
    splits = {}
    dev = _dev_split(d)
    if dev is not None:
        splits["dev"] = dev[:limit]
    if d.test_path:
        splits["test"] = read_annotated(d.test_path, what="data.test_path")[:limit]
    elif d.test_split is not None:  # null: only the extra_tests
        splits["test"] = load(d.name, d.test_split)[:limit]
    for spec in d.extra_tests or []:  # "name:split" -> split named after the dataset
        name, _, split = str(spec).partition(":")
        splits[name] = load(name, split or "test")[:limit]
    return splits


def _select_pairs(cfg: DictConfig) -> list[AlignedPair] | None:
    """Pairs for choosing the best epoch (`training.select`): the dev split, or the last N
    training pairs (held out of training by `_train_pairs`); never the test split."""
    _, t, d = settings(cfg)
    if t.select is None:
        return None
    return _dev_split(d) if t.select == "dev" else _train_split(d)[0][-int(t.select):]


def _decoded(aligner, pairs, label: str, name: str, **kw) -> list[set]:
    """The links of `aligner.align(pairs, **kw)` per pair (the row `name`), timed."""
    t0 = time.time()
    out = aligner.align(pairs, **kw)
    print(f"== {label} {name} ({len(pairs)} pairs, {len(pairs) / (time.time() - t0):.0f} "
          "pairs/s incl. features)")
    return [set(o[1]) for o in out]


def _evaluate_aligner(cfg: DictConfig, aligner: MonoAligner | MonoEnsemble,
                      timing: dict) -> dict:
    """Decode every evaluation split in each direction (+ union), print the reports, write
    `predictions.<split>.<direction>.pharaoh` and metrics.json into the run folder; return
    the metrics."""
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    embedder = _embedder(cfg)
    label = f"{aligner.kind} {_data_name(cfg)}"
    metrics: dict[str, dict[str, float]] = {}
    if timing:
        metrics["train"] = {f"{d}/{k}": v for d, row in timing.items() for k, v in row.items()}
    m, t, _ = settings(cfg)
    decode = {"decode": m.decode, "threshold": float(m.threshold), "embedder": embedder,
              "encoder_precision": m.encoder_precision,  # neural: decoding only
              "batch_size": int(t.decode_batch)}
    combine = check_combine(m.combine or "none", aligner.directions)
    for split, pairs in _eval_splits(cfg).items():
        if not pairs:
            raise AlignersInputError(f"the {split} split has no pairs to score")
        row = functools.partial(_decoded, aligner, pairs, f"{label} {split}", **decode)
        preds = {d: row(d, direction=d) for d in aligner.directions}
        if len(preds) == 2:
            preds["union"] = [combine_links(a, b, "union")
                              for a, b in zip(preds["s2t"], preds["t2s"])]
        if combine not in ("none", "union"):  # model.combine: its own row, e.g. test/grow-diag
            preds[combine] = row(combine, combine=combine)
        for d, links in preds.items():
            if d not in DIRECTIONS:
                print(f"== {label} {split} {d}")
            rep = evaluate_alignments([p.alignment for p in pairs], links,
                                      src_tokens=[p.src for p in pairs],
                                      tgt_tokens=[p.tgt for p in pairs])
            print(format_report(rep))
            metrics[f"{split}/{d}"] = flatten_numbers(rep.to_dict(), sep="/", finite=False)
            write_lines(str(out_dir / f"predictions.{split}.{d}.pharaoh"),
                        (link_line(sorted(al)) for al in links))
    write_metrics_json(out_dir / "metrics.json", metrics)
    print(f"wrote {out_dir / 'metrics.json'}")
    return metrics


def train(cfg: DictConfig) -> dict:
    """Fit one model per direction in `cfg.training.directions` (with `training.members`: that
    for each member, each from the same seed, `member_cfgs`), save `<run>/model`
    (one MonoAligner, or the members' MonoEnsemble), then score the evaluation splits;
    returns metrics.json's content."""
    m, t, _ = check_cfg(cfg)
    configs = member_cfgs(cfg)
    check_combine(m.combine or "none", t.directions)
    torch.set_num_threads(int(t.threads))
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    embedder = _embedder(cfg)
    select = _select_pairs(cfg)
    members, timing, weights = [], {}, {}
    for k, mcfg in enumerate(configs):
        pl.seed_everything(int(cfg.seed), verbose=False)
        pairs = _train_pairs(mcfg)
        tag = f"m{k}." if len(configs) > 1 else ""
        models = {}
        directions = settings(mcfg)[1].directions
        for d in directions:
            models[d], timing[tag + d] = _fit(mcfg, pairs, d, embedder,
                                              n_directions=len(directions),
                                              select_pairs=select)
            weights[tag + d] = {n: round(float(w), 6)
                                for n, w in zip(models[d].feature_names,
                                                models[d].w_emit.tolist())}
        members.append(MonoAligner(models, kind=m.kind))
    aligner = members[0] if len(members) == 1 else MonoEnsemble(members)
    aligner.save(out_dir / "model", config={
        "training": OmegaConf.to_container(cfg.training, resolve=True),
        "data": _data_name(cfg), "train_pairs": len(pairs)})
    (out_dir / "weights.json").write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")
    print(f"saved {out_dir / 'model'} (weights by feature name: {out_dir / 'weights.json'})")
    return _evaluate_aligner(cfg, aligner, timing)


def evaluate(cfg: DictConfig) -> dict:
    """Score the model folder `ckpt_path` (a training run's `<run>/model`, a file inside it
    or the run folder; every direction it holds, and their union) on the test split or
    `data.test_path` (and `data.dev_path`)."""
    from aligners.export import resolve_model_folder
    from aligners.models.mono.ensemble import load_aligners

    if not cfg.get("ckpt_path"):
        raise AlignersInputError("evaluate needs ckpt_path=RUN/model (the model folder a "
                                 "training run saved)")
    t = check_cfg(cfg)[1]
    paths = list(cfg.ckpt_path) if OmegaConf.is_list(cfg.ckpt_path) else [cfg.ckpt_path]
    aligner = load_aligners([resolve_model_folder(p) for p in paths])
    torch.set_num_threads(int(t.threads))
    return _evaluate_aligner(cfg, aligner, {})
