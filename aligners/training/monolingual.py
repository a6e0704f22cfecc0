"""`task: monolingual`: token CRF / semi-Markov phrasal CRF aligners (Yao et al. 2013).

`python train.py experiment=yao2013_msr06_phrase` featurises `cfg.data.name`'s train split,
fits the model with softmax-margin + L2 (L-BFGS full batch as the paper, or Adam) inside a
Lightning loop, saves `model.safetensors` + `model.json` (no pickle) in Hydra's output dir,
decodes the test split in each direction (s2t, t2s) and their union, and writes
`metrics.json` with P/R/F1/E and the identical/non-identical and token/phrase breakdowns.
`python evaluate.py experiment=... ckpt_path=OUT/model.safetensors [data.test_path=X.json]`
scores any jacana JSON file with a trained model.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from pathlib import Path

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file, save_file

from aligners.data.datasets import load
from aligners.data.jacana import read_jacana_json
from aligners.data.types import AlignedPair
from aligners.errors import AlignersInputError
from aligners.metrics import evaluate_alignments, format_report
from aligners.models._mono_potentials import MonoExample, collate, prepare
from aligners.models.crf import TokenCRFAligner
from aligners.models.semicrf import PhraseCRFAligner

__all__ = ["LitMonoAligner", "build_model", "featurise", "chunks", "predict", "train",
           "evaluate", "save_model", "load_model"]


def build_model(*, kind: str, max_src_len: int = 3, max_tgt_len: int = 3,
                embedding: bool = False, phrase_cues: bool = False) -> PhraseCRFAligner:
    """`kind` = "token" (linear-chain CRF) or "phrase" (semi-Markov, Ls x Lt)."""
    if kind == "token":
        return TokenCRFAligner(embedding=embedding)
    if kind == "phrase":
        return PhraseCRFAligner(max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                                embedding=embedding, phrase_cues=phrase_cues)
    raise ValueError(f"model.kind must be 'token' or 'phrase', got {kind!r}")


def _flip(pair: AlignedPair) -> AlignedPair:
    from aligners.data.types import Alignment
    al = pair.alignment
    flipped = None if al is None else Alignment(frozenset((j, i) for i, j in al.sure),
                                                frozenset((j, i) for i, j in al.possible))
    return AlignedPair(pair.tgt, pair.src, flipped, pair.id)


def featurise(pairs: list[AlignedPair], model: PhraseCRFAligner, *, direction: str = "s2t",
              gold_links: str = "possible", embedder=None) -> list[MonoExample]:
    """Pairs -> cached MonoExamples for `model` (t2s swaps the sentences)."""
    if model.embedding and embedder is None:
        embedder = _shared_embedder()
    if embedder is not None and hasattr(embedder, "encode"):
        embedder.encode([p.src for p in pairs] + [p.tgt for p in pairs])  # batched, memoised
    out = []
    with one_thread():
        for p in pairs:
            p = _flip(p) if direction == "t2s" else p
            links = None
            if p.alignment is not None:
                links = p.alignment.possible if gold_links == "possible" else p.alignment.sure
            out.append(prepare(p.src, p.tgt, links, max_src_len=model.max_src_len,
                               max_tgt_len=model.max_tgt_len, embedder=embedder,
                               phrase_cues=getattr(model, "phrase_cues", False)))
    return out


@contextlib.contextmanager
def one_thread():
    """Run the block on one intra-op thread, then restore the caller's setting. Per-pair
    features and decoding batches are small tensors: intra-op threads only add fork/join
    waits (benchmarks/mono_side_by_side.py on the loaded 2-core box: phrase decoding 45
    pairs/s on 2 threads vs 3063 on 1)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def chunks(examples: list[MonoExample], *, max_tgt_len: int, batch_size: int,
           with_gold: bool = True, cost: tuple[float, float] = (1.0, 1.0),
           pad_features: bool = False):
    """Length-bucketed MonoBatches (sorted by target then source length); also the order."""
    order = sorted(range(len(examples)), key=lambda n: (examples[n].emit.shape[2] // 8,
                                                         len(examples[n].src)))
    batches = [collate([examples[n] for n in order[s: s + batch_size]], max_tgt_len=max_tgt_len,
                       fp_cost=cost[0], fn_cost=cost[1], with_gold=with_gold,
                       pad_features=pad_features)
               for s in range(0, len(order), batch_size)]
    return batches, order


@torch.no_grad()
def predict(model: PhraseCRFAligner, examples: list[MonoExample], *, batch_size: int = 64):
    """Decode in length buckets; returns per example (blocks, links, normalised score)."""
    model.eval()
    batches, order = chunks(examples, max_tgt_len=model.max_tgt_len, batch_size=batch_size,
                            with_gold=False, pad_features=False)
    out = [None] * len(examples)
    with one_thread():
        flat = [r for b in batches for r in model.decode(b)]
    for n, r in zip(order, flat):
        out[n] = r
    return out


class LitMonoAligner(pl.LightningModule):
    """Orchestration only: softmax-margin + L2 with L-BFGS (full batch) or Adam (mini-batch)."""

    def __init__(self, *, kind: str, max_src_len: int, max_tgt_len: int, embedding: bool,
                 optimizer: str, lr: float, l2: float, cost_weight: float, max_iter: int,
                 n_pairs: int, phrase_cues: bool = False):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.evaluations = 0
        self.model = build_model(kind=kind, max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                                 embedding=embedding, phrase_cues=phrase_cues)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch  # MonoBatch lists stay on the CPU (the model is tiny)

    def _objective(self, batches) -> float:
        hp = self.hparams
        total = 0.0
        for b in batches:
            loss = self.model.loss(b, cost_weight=hp.cost_weight) / hp.n_pairs
            self.manual_backward(loss)
            total += loss.item()
        share = sum(len(b.examples) for b in batches) / hp.n_pairs
        reg = 0.5 * hp.l2 * share * self.model.l2() / hp.n_pairs
        self.manual_backward(reg)
        self.evaluations += 1
        if self.evaluations % 10 == 0:
            print(f"  objective evaluation {self.evaluations}: {total + reg.item():.5f}",
                  flush=True)
        return total + reg.item()

    def training_step(self, batches, batch_idx):
        opt = self.optimizers()
        if self.hparams.optimizer == "lbfgs":
            def closure():
                opt.zero_grad()
                return torch.tensor(self._objective(batches))
            value = opt.step(closure)
        else:
            opt.zero_grad()
            value = torch.tensor(self._objective(batches))
            opt.step()
        self.log("train_loss", float(value), prog_bar=True, batch_size=1)

    def configure_optimizers(self):
        hp = self.hparams
        if hp.optimizer == "lbfgs":
            return torch.optim.LBFGS(self.model.parameters(), lr=hp.lr, max_iter=hp.max_iter,
                                     history_size=20, line_search_fn="strong_wolfe",
                                     tolerance_grad=1e-6, tolerance_change=1e-8)
        if hp.optimizer == "adam":
            return torch.optim.Adam(self.model.parameters(), lr=hp.lr)
        raise ValueError(f"optimizer must be lbfgs or adam, got {hp.optimizer!r}")


def save_model(model: PhraseCRFAligner, path: Path, *, kind: str, extra: dict) -> None:
    """`path` (.safetensors) + `path.with_suffix('.json')` config; loading never unpickles."""
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(path))
    cfg = {"kind": kind, "max_src_len": model.max_src_len, "max_tgt_len": model.max_tgt_len,
           "embedding": model.embedding, "phrase_cues": getattr(model, "phrase_cues", False),
           "feature_names": model.feature_names, **extra}
    path.with_suffix(".json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")


def load_model(path: str | Path) -> tuple[PhraseCRFAligner, dict]:
    """Model + config saved by `save_model`; a missing/unreadable/inconsistent file raises
    `AlignersInputError` naming it. Never unpickles."""
    path = Path(path)
    cfg_path = path.with_suffix(".json")
    for p in (path, cfg_path):
        if not p.is_file():
            raise AlignersInputError("file not found; expected a model written by "
                                     "save_model (.safetensors + .json)", path=str(p))
    try:
        cfg = json.loads(cfg_path.read_bytes().decode("utf-8-sig"))
        model = build_model(kind=cfg["kind"], max_src_len=cfg["max_src_len"],
                            max_tgt_len=cfg["max_tgt_len"], embedding=cfg["embedding"],
                            phrase_cues=cfg.get("phrase_cues", False))
    except (ValueError, KeyError, TypeError) as err:
        raise AlignersInputError(f"bad model config ({type(err).__name__}: {err}); expected "
                                 "the JSON written by save_model", path=str(cfg_path)) from None
    try:
        model.load_state_dict(load_file(str(path)))
    except Exception as err:  # safetensors raises its own error types
        raise AlignersInputError(f"cannot load weights ({type(err).__name__}: {err}); expected "
                                 "the safetensors file written by save_model",
                                 path=str(path)) from None
    return model, cfg


@functools.lru_cache(maxsize=1)
def _shared_embedder():
    from aligners.features.embedding import MiniLMEmbedder
    return MiniLMEmbedder()


def _embedder(cfg: DictConfig):
    return _shared_embedder() if cfg.model.get("embedding", False) else None


def _fit(cfg: DictConfig, pairs: list[AlignedPair], direction: str, embedder):
    m, t = cfg.model, cfg.training
    lit = LitMonoAligner(kind=m.kind, max_src_len=m.get("max_src_len", 1),
                         max_tgt_len=m.get("max_tgt_len", 1), embedding=m.get("embedding", False),
                         optimizer=t.optimizer, lr=t.lr, l2=t.l2, cost_weight=t.cost_weight,
                         max_iter=t.max_iter, n_pairs=len(pairs),
                         phrase_cues=m.get("phrase_cues", False))
    t0 = time.time()
    examples = featurise(pairs, lit.model, direction=direction, gold_links=t.gold_links,
                         embedder=embedder)
    t_feat = time.time() - t0
    batches, _ = chunks(examples, max_tgt_len=lit.model.max_tgt_len, batch_size=t.batch_size,
                        cost=(t.fp_cost, t.fn_cost))
    data = [batches] if t.optimizer == "lbfgs" else [[b] for b in batches]
    loader = torch.utils.data.DataLoader(data, batch_size=None, collate_fn=lambda x: x,
                                         shuffle=t.optimizer != "lbfgs")
    trainer = pl.Trainer(max_epochs=t.epochs, accelerator="cpu", devices=1,
                         enable_checkpointing=False, logger=False, enable_progress_bar=False,
                         enable_model_summary=False)
    t0 = time.time()
    trainer.fit(lit, loader)
    timing = {"featurise_s": round(t_feat, 1), "fit_s": round(time.time() - t0, 1),
              "epoch_s": round((time.time() - t0) / max(t.epochs, 1), 1)}
    return lit.model, timing


def _score(model, pairs, direction: str, embedder, batch_size: int):
    examples = featurise(pairs, model, direction=direction, embedder=embedder)
    t0 = time.time()
    out = predict(model, examples, batch_size=batch_size)
    dt = time.time() - t0
    links = [{(j, i) for i, j in o[1]} if direction == "t2s" else set(o[1]) for o in out]
    return links, [o[2] for o in out], dt


def _report(pairs, preds) -> dict:
    rep = evaluate_alignments([p.alignment for p in pairs], preds,
                              src_tokens=[p.src for p in pairs], tgt_tokens=[p.tgt for p in pairs])
    print(format_report(rep))
    return rep.to_dict()


def _train_pairs(cfg: DictConfig) -> list[AlignedPair]:
    pairs = load(cfg.data.name, cfg.data.get("train_split", "train"))
    if cfg.data.get("dev_holdout"):  # tuning runs: hold out the last N training pairs
        pairs = pairs[: -int(cfg.data.dev_holdout)]
    if cfg.data.get("train_limit"):
        pairs = pairs[: int(cfg.data.train_limit)]
    return pairs


def _test_pairs(cfg: DictConfig) -> list[AlignedPair]:
    if cfg.data.get("dev_holdout"):
        pairs = load(cfg.data.name, cfg.data.get("train_split", "train"))[
            -int(cfg.data.dev_holdout):]
    elif cfg.data.get("test_path"):
        pairs = read_jacana_json(cfg.data.test_path)
    else:
        pairs = load(cfg.data.name, cfg.data.get("test_split", "test"))
    return pairs[: int(cfg.data.test_limit)] if cfg.data.get("test_limit") else pairs


def train(cfg: DictConfig) -> dict:
    """Fit one model per direction in `cfg.training.directions`, then score the test split."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(int(cfg.training.get("threads", 1)))
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pairs = _train_pairs(cfg)
    embedder = _embedder(cfg)
    models, timing = {}, {}
    for d in cfg.training.directions:
        models[d], timing[d] = _fit(cfg, pairs, d, embedder)
        save_model(models[d], out_dir / f"model.{d}.safetensors", kind=cfg.model.kind,
                   extra={"direction": d, "config": OmegaConf.to_container(cfg.training)})
        print(f"[{d}] weights:", {n: round(float(w), 3) for n, w in
                                  zip(models[d].feature_names, models[d].w_emit)})
    return _evaluate_models(cfg, models, timing, out_dir)


def _evaluate_models(cfg, models, timing, out_dir: Path) -> dict:
    pairs = _test_pairs(cfg)
    embedder = _embedder(cfg)
    metrics = {"task": "monolingual", "model": cfg.model.kind, "data": cfg.data.name,
               "timing": timing, "results": {}}
    preds = {}
    for d, model in models.items():
        preds[d], _, dt = _score(model, pairs, d, embedder, cfg.training.get("decode_batch", 64))
        print(f"== {cfg.model.kind} {cfg.data.name} {d} ({len(pairs)} pairs, "
              f"decode {len(pairs) / dt:.0f} pairs/s excl. features)")
        metrics["results"][d] = _report(pairs, preds[d])
    if len(preds) == 2:
        union = [a | b for a, b in zip(preds["s2t"], preds["t2s"])]
        print(f"== {cfg.model.kind} {cfg.data.name} union")
        metrics["results"]["union"] = _report(pairs, union)
    with open(out_dir / "metrics.json", "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2)
    print(f"wrote {out_dir / 'metrics.json'}")
    return metrics


def evaluate(cfg: DictConfig) -> dict:
    """Score `ckpt_path` (a model.<dir>.safetensors; its sibling direction is used too when
    present) on the test split or `data.test_path`."""
    if not cfg.get("ckpt_path"):
        raise ValueError("evaluate needs ckpt_path=PATH/model.s2t.safetensors")
    path = Path(cfg.ckpt_path)
    models = {}
    for d in ("s2t", "t2s"):
        cand = path.with_name(f"model.{d}.safetensors")
        if cand.exists():
            models[d] = load_model(cand)[0]
    if not models:
        model, mcfg = load_model(path)
        models[mcfg.get("direction", "s2t")] = model
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _evaluate_models(cfg, models, {}, out_dir)
