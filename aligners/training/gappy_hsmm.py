"""Task `gappy-hsmm`: the regimen of Bansal, Quirk & Moore (2011, sec. 7) and its Table 1.

1. word HMM by agreement (Liang et al. 2006; the baseline row);
2. Model 1 + word HMM both directions *without* agreement (the phrasal model's start; its
   iteration counts are `model.start`'s, chosen on dev like the paper's);
3. phrasal HSMM with contiguous phrases, trained by agreement (`gappy: false`);
4. the same with contiguous + gappy phrases.
Each EM iteration is one Lightning epoch (manual optimisation; counts in the model's
buffers, M-step at epoch end). Evaluation (sec. 7.2): lowercased text; dev = the tuning
split + the first `dev_from_test` pairs of the test split, test = the rest; the decoding
(method, threshold, symmetrization) is chosen on dev and scored on test; AER on the whole
test split with the decoding chosen on the tuning split only. Metrics go to
`metrics.json`; the maths lives in `aligners.models.gappy_hsmm`.
"""

from __future__ import annotations

import gc
import itertools
import resource
import time
from pathlib import Path

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf

from aligners.data.bitext import build_index
from aligners.data.heap import release_free_heap
from aligners.data.vocab import WordIds
from aligners.models.gappy_hsmm import PhrasalConfig, build_phrasal_aligner
from aligners.models.gappy_hsmm.decode import decode, link_matrices, prepared_batch
from aligners.models.gappy_hsmm.init import word_viterbi
from aligners.models.gappy_hsmm.prepared import ReuseCache
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner
from aligners.training.hmm import LitWordAligner
from aligners.training.trainer import build_trainer

__all__ = ["LitPhrasalAligner", "choose", "gappy_patterns", "start_config", "train",
           "evaluate"]

class LitPhrasalAligner(pl.LightningModule):
    """Orchestration only: one batch's E-step per step, M-step per epoch (one process)."""

    def __init__(self, model, index, layouts: ReuseCache | None = None):
        super().__init__()
        self.automatic_optimization = False
        self.model, self.index = model, index
        self._layouts = layouts  # batch CompactLayouts from build_phrasal_aligner, or None
        self.history: list[list[float]] = []
        self._prepared = ReuseCache()  # batch number -> PhrasalAligner.prepare(...)
        self._anchor = torch.nn.Parameter(torch.zeros(1))
        self.save_hyperparameters(model.hparams())

    def train_dataloader(self):
        if self.trainer is not None and self.trainer.world_size > 1:
            raise ValueError("task gappy-hsmm runs EM on one process: use trainer=cpu or "
                             "trainer=gpu with devices=1 (no count all-reduce yet)")
        return torch.utils.data.DataLoader(list(range(len(self.index))), batch_size=None)

    def configure_optimizers(self):
        return None

    def on_train_epoch_start(self):
        self.model.reset_counts()

    def training_step(self, k, batch_idx):
        k, m = int(k), self.model
        m.accumulate(prepared=prepared_batch(m, self.index, k, self._prepared, self._layouts))

    def on_train_epoch_end(self):
        ll = self.model.m_step()
        self.history.append(ll.tolist())
        self.log_dict({"loglik_fwd": float(ll[0]), "loglik_bwd": float(ll[1])}, on_epoch=True)


def _fit(cfg, lit, epochs):
    trainer = build_trainer(cfg, max_epochs=epochs, use_distributed_sampler=False,
                            limit_val_batches=0)
    trainer.fit(lit)
    return trainer


# ------------------------------------------------------------------ decoding
def _score(gold, links):
    from aligners.metrics import evaluate_alignments

    return evaluate_alignments([p.alignment for p in gold], links, breakdowns=False).micro


def _decode(mats, dec: dict) -> list:
    return decode(mats, method=dec["method"], threshold=dec["threshold"],
                  heuristic=dec["symmetrize"])


def choose(mats, vmats, gold, grid) -> tuple[dict, float]:
    """Decoding with the lowest AER on `gold` (a dev split) over `grid` (the one chooser,
    `aligners.inference.choose`)."""
    from aligners.inference.choose import choose_decoding

    def score(method, th, heuristics):
        use = vmats if method == "viterbi" else mats
        return [_score(gold, decode(use, method=method, threshold=th, heuristic=h)).aer
                for h in heuristics]

    return choose_decoding(grid, score)


def gappy_patterns(gold, links) -> tuple[int, int, int, int]:
    """(pairs whose gold links one word to two or more non-adjacent words of the other side
    with a gap, of those fully right, pairs with `not` <-> `ne ... pas`, of those fully right).
    Fully right: every sure link of the pattern predicted, no predicted link of its word
    outside the possible links."""
    n = ok = n_np = ok_np = 0
    for p, pred in zip(gold, links):
        pred = set(pred)
        sure, poss = set(p.alignment.sure), set(p.alignment.possible) | set(p.alignment.sure)
        pats = []
        for side in (0, 1):
            by = {}
            for lk in sure:
                by.setdefault(lk[side], []).append(lk[1 - side])
            for w, others in by.items():
                o = sorted(others)
                if len(o) >= 2 and o[-1] - o[0] + 1 > len(o):
                    pats.append((side, w))
        if not pats:
            continue
        n += 1
        good = True
        for side, w in pats:
            need = {lk for lk in sure if lk[side] == w}
            have = {lk for lk in pred if lk[side] == w}
            good &= need <= have and have <= poss
        ok += good
        src, tgt = p.src, p.tgt
        for i, w in enumerate(src):
            if w == "not":
                js = {j for (a, j) in sure if a == i}
                if {"ne", "pas"} <= {tgt[j] for j in js}:
                    n_np += 1
                    ok_np += {(i, j) for j in js if tgt[j] in ("ne", "pas")} <= pred
                    break
    return n, ok, n_np, ok_np


# ------------------------------------------------------------------ task
def _data(cfg):
    from aligners.data.datasets import iter_parallel, load, lowercased

    test = lowercased(load(cfg.data.name, cfg.data.eval_splits[0]))
    tune = lowercased(load(cfg.data.name, cfg.data.tune_split))

    def stream():
        it = iter_parallel(cfg.data.name, cfg.data.train_split, lowercase=True)
        limit = cfg.data.get("train_limit")
        yield from (itertools.islice(it, limit) if limit else it)
        for p in [*test, *tune]:
            yield list(p.src), list(p.tgt)

    return stream(), test, tune


def _warm_up_kernels() -> None:
    """Load the E-steps' compiled count scatters once (a tiny call each)."""
    from aligners.models._scatter import scatter_add2_, scatter_add_

    ids, v = torch.zeros(1, dtype=torch.int32), torch.zeros(1)
    scatter_add_(torch.zeros(1), ids, v)
    scatter_add2_(torch.zeros(1, 2), ids, v, v)


def sized(node, part: str, n_pairs: int) -> dict:
    """`model.<part>` ("start" or "phrasal") as a dict whose null values are the dev-chosen
    regimen's for `n_pairs` pairs (`REGIMENS`: the one table `aligners align --model
    gappy-hsmm` uses too)."""
    from aligners.models.gappy_hsmm.config import regimen

    given = OmegaConf.to_container(node) if node is not None else {}
    table = {k.partition(".")[2]: v for k, v in regimen(n_pairs).items()
             if k.startswith(part + ".")}
    return {k: table[k] if v is None and k in table else v for k, v in given.items()}


def start_config(m: DictConfig, n_pairs: int) -> WordAlignConfig:
    """The phrasal model's start (sec. 7.1: Model 1 + word HMM, no agreement): `model.word`
    with `model.start`'s iteration counts (Bansal et al. tuned them on dev, sec. 7.2; null:
    the regimen of `n_pairs` pairs)."""
    start = sized(m.get("start"), "start", n_pairs)
    unknown = set(start) - {"ibm1_iterations", "hmm_iterations"}
    if unknown:
        raise ValueError(f"model.start: unknown keys {sorted(unknown)} (allowed: "
                         "ibm1_iterations, hmm_iterations)")
    return WordAlignConfig(**{**{k: m.word[k] for k in m.word}, **start, "agreement": False})


class _Table:
    """The scored rows of Table 1: every model decoded on the sub-indexes of the dev, test
    (rest), trial and all-447 pairs, with the decoding chosen on dev (and on trial for the
    447 column)."""

    def __init__(self, index, src_ids, tgt_ids, dev, test, tune, n_dev, grid):
        self.dev, self.test, self.tune, self.test_rest = dev, test, tune, test[n_dev:]
        self.grid = grid
        self.subs = {name: build_index([(p.src, p.tgt) for p in g], src_ids, tgt_ids,
                                       keys=index.keys)
                     for name, g in (("dev", dev), ("test", self.test_rest), ("trial", tune),
                                     ("all", test))}
        self.metrics, self.rows = {}, []

    def report(self, name, model, seconds):
        subs, grid, test_rest = self.subs, self.grid, self.test_rest
        mats = {k: link_matrices(model, ix) for k, ix in subs.items()}
        # Viterbi links: dev, trial (decoding choice), test (the Viterbi row); all 447 only
        # when the trial-chosen decoding is Viterbi (below)
        vmats = {k: link_matrices(model, ix, viterbi=True) for k, ix in subs.items()
                 if k != "all"}
        dec, dev_aer = choose(mats["dev"], vmats["dev"], self.dev, grid)
        use = vmats if dec["method"] == "viterbi" else mats
        s = _score(test_rest, _decode(use["test"], dec))
        dec_t, _ = choose(mats["trial"], vmats["trial"], self.tune, grid)
        if dec_t["method"] == "viterbi":
            vmats["all"] = link_matrices(model, subs["all"], viterbi=True)
        use_t = vmats if dec_t["method"] == "viterbi" else mats
        links_all = _decode(use_t["all"], dec_t)
        s_all = _score(self.test, links_all)
        vit = _score(test_rest, decode(vmats["test"], method="viterbi", threshold=0.5,
                                       heuristic=grid["heuristics"][0]))
        g = gappy_patterns(self.test, links_all)
        f1 = 2 * s.precision * s.recall / max(1e-12, s.precision + s.recall)
        self.metrics[name] = {
            "precision": s.precision, "recall": s.recall, "f1": f1, "aer": s.aer,
            "dev_aer": dev_aer, "aer_447_trial_tuned": s_all.aer, "viterbi_aer": vit.aer,
            "train_seconds": seconds, "gappy_gold_pairs": g[0], "gappy_right": g[1],
            "ne_pas_gold_pairs": g[2], "ne_pas_right": g[3]}
        self.rows.append((name, dec, s, f1, s_all.aer, dec_t, g))
        print(f"[{name}] dev {dec} AER {dev_aer:.4f}; test P {s.precision:.4f} R {s.recall:.4f} "
              f"F1 {f1:.4f} AER {s.aer:.4f}; 447 ({dec_t}) AER {s_all.aer:.4f}; gappy {g}",
              flush=True)

    def print(self) -> None:
        print(f"{'model':<22} {'prec':>6} {'rec':>6} {'F1':>6} {'AER':>7} {'AER447':>7}  decoding")
        for name, dec, s, f1, a447, dec_t, _ in self.rows:
            print(f"{name:<22} {s.precision:6.4f} {s.recall:6.4f} {f1:6.4f} {s.aer:7.4f} "
                  f"{a447:7.4f}  dev:{dec} trial:{dec_t}")


def train(cfg: DictConfig) -> dict:
    """Run the four stages, print Table 1 and write metrics.json; returns the metrics."""
    from aligners.metrics import write_metrics_json

    torch.set_num_threads(int(cfg.get("threads", 1)))
    pl.seed_everything(int(cfg.seed), verbose=False)
    m = cfg.model
    pairs, test, tune = _data(cfg)
    n_dev = int(m.dev_from_test)
    src_ids, tgt_ids = WordIds(), WordIds()
    t0 = time.time()
    index = build_index(pairs, src_ids, tgt_ids, cells=int(m.batch_cells))
    src_ids.frozen = tgt_ids.frozen = True
    index_s = time.time() - t0
    table = _Table(index, src_ids, tgt_ids, tune + test[:n_dev], test, tune, n_dev,
                   OmegaConf.to_container(m.tune_grid))
    times, cpu = {}, {}  # wall and CPU (process) seconds
    _warm_up_kernels()  # one-off numba loads, not charged to the first timed stage
    _baseline(cfg, index, table, times, cpu)
    pcfg = {k: v for k, v in sized(m.phrasal, "phrasal", index.n_sentences).items()
            if k in PhrasalConfig.__dataclass_fields__}
    model, stats, start = _phrasal_stages(cfg, index, pcfg, table, times, cpu)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    metrics = table.metrics
    metrics["run"] = {"index_seconds": index_s, "peak_rss_mb": rss_mb,
                      "start_ibm1_iterations": start.ibm1_iterations,
                      "start_hmm_iterations": start.hmm_iterations,
                      "phrasal_iterations": int(pcfg["iterations"]),
                      "training_pairs": index.n_sentences, **{f"{k}_seconds": v
                                                              for k, v in times.items()},
                      **{f"{k}_cpu_seconds": v for k, v in cpu.items()}}
    for name, st in stats.items():
        metrics[f"phrases_{name}"] = {k: float(v) for k, v in st.items()}
    table.print()
    print(f"peak RSS {rss_mb:.0f} MB; times {times}; CPU times {cpu}")
    out_dir = Path(cfg.paths.output_dir)
    write_metrics_json(out_dir / "metrics.json", metrics)
    if model is not None and cfg.get("save_model", True):
        from aligners.export import write_model
        from aligners.models.gappy_hsmm.io import phrasal_parts

        dec = table.rows[-1][1]  # the gappy model's decoding chosen on dev
        write_model(out_dir / "model", **phrasal_parts(model, src_ids, tgt_ids, decoding=dec))
    return metrics


def _baseline(cfg, index, table: _Table, times: dict, cpu: dict) -> None:
    """Stage 1: the word HMM by agreement (the baseline row)."""
    wcfg = {k: cfg.model.word[k] for k in cfg.model.word}
    t0, c0 = time.time(), time.process_time()
    base = WordAligner.from_index(index, WordAlignConfig(**{**wcfg, "agreement": True}))
    _fit(cfg, LitWordAligner.from_model(base, index), base.n_iterations)
    times["word_hmm_agreement"] = time.time() - t0
    cpu["word_hmm_agreement"] = time.process_time() - c0
    table.report("word_hmm_agreement", base, times["word_hmm_agreement"])
    del base
    release_free_heap()  # the baseline's freed tables and E-step buffers back to the OS


def _phrasal_stages(cfg, index, pcfg: dict, table: _Table, times: dict, cpu: dict):
    """Stage 2, the word HMM without agreement (its iteration counts: `model.start`, chosen
    on dev), then from its Viterbi alignments (run once, shared: its time is counted in each
    model's initialisation, as each would need it alone) stages 3 and 4, the contiguous and
    the gappy phrasal model. Returns (the gappy model, the phrase statistics per model, the
    start's config)."""
    t0, c0 = time.time(), time.process_time()
    start = start_config(cfg.model, index.n_sentences)
    word = WordAligner.from_index(index, start)
    _fit(cfg, LitWordAligner.from_model(word, index), word.n_iterations)
    times["word_hmm_no_agreement"] = time.time() - t0
    cpu["word_hmm_no_agreement"] = time.process_time() - c0
    stats = {}
    model = None
    t0, c0 = time.time(), time.process_time()
    vit = word_viterbi(word, index)
    vit_s, vit_cpu = time.time() - t0, time.process_time() - c0
    times["word_viterbi"], cpu["word_viterbi"] = vit_s, vit_cpu
    for name, gappy in (("contiguous", False), ("gappy", True)):
        t0, c0 = time.time() - vit_s, time.process_time() - vit_cpu
        layouts = ReuseCache()  # batch layouts matched while building: reused by iteration 1
        model, st = build_phrasal_aligner(word, index, PhrasalConfig(**{**pcfg, "gappy": gappy}),
                                          vit=vit, layouts=layouts)
        if gappy:  # the start model and its Viterbi links: not needed after the last build
            word = vit = None
            gc.collect()
            release_free_heap()
        init_s, init_cpu = time.time() - t0, time.process_time() - c0
        lit = LitPhrasalAligner(model, index, layouts)
        _fit(cfg, lit, model.config.iterations)
        lit._prepared.clear()  # the prepared batches of this model: not needed any more
        times[name] = time.time() - t0
        cpu[name] = time.process_time() - c0
        stats[name] = {**st, "init_seconds": init_s, "init_cpu_seconds": init_cpu}
        print(f"[{name}] {st}; init {init_s:.1f} s (CPU {init_cpu:.1f} s), total "
              f"{times[name]:.1f} s (CPU {cpu[name]:.1f} s); "
              f"loglik {lit.history}", flush=True)
        table.report(f"+{name}", model, times["word_hmm_no_agreement"] + times[name])
        model.clear_caches()  # its cached tables: not kept while the next model trains
        if not gappy:  # the contiguous model is done: its memory back before the next build
            del lit
            model = None
            gc.collect()  # the Lightning module and its trainer hold each other
            release_free_heap()
    return model, stats, start


def evaluate(cfg: DictConfig) -> dict:
    """Score the saved model `ckpt_path` (a model folder, a file in it, or its run folder) on
    the test split (all pairs); writes `metrics.json` in the run folder."""
    from aligners.data.datasets import load as load_split
    from aligners.data.datasets import lowercased
    from aligners.export import load, resolve_model_folder
    from aligners.metrics import write_metrics_json

    model = load(resolve_model_folder(cfg.get("ckpt_path")))
    test = lowercased(load_split(cfg.data.name, cfg.data.eval_splits[0]))
    s = _score(test, model.align([p.src for p in test], [p.tgt for p in test]))
    print(f"test AER {s.aer:.4f} P {s.precision:.4f} R {s.recall:.4f}")
    metrics = {"test": {"aer": s.aer, "precision": s.precision, "recall": s.recall}}
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_metrics_json(out / "metrics.json", metrics)
    return metrics
