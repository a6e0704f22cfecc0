"""Task `gappy-hsmm`: the regimen of Bansal, Quirk & Moore (2011, sec. 7) and its Table 1,
as the hooks of the one word task (`word_task.WordTask`).

1. word HMM by agreement (Liang et al. 2006; the baseline row);
2. Model 1 + word HMM both directions *without* agreement (the phrasal model's start; its
   iteration counts are `model.start`'s, chosen on dev like the paper's);
3. phrasal HSMM with contiguous phrases, trained by agreement (`gappy: false`);
4. the same with contiguous + gappy phrases.
Each EM iteration is one Lightning epoch (`training.hmm.LitEM`: the models' own E-step and
M-step). Evaluation (sec. 7.2): lowercased text (`data.lowercase`); dev = the tuning split +
the first `dev_from_test` pairs of the test split, test = the rest; the decoding (method,
threshold, symmetrization) is chosen on dev and scored on test; AER on the whole test split
with the decoding chosen on the tuning split only. The rows go to `metrics.json`; the
gappy model, with its dev-chosen decoding, is saved and decoded on every gold split as every
word task's model is. Without a tuning split there is no dev: the gappy model alone is
trained (stages 2 and 4) and decoded with the family's default decoding, as `aligners
align --model gappy-hsmm` does. The maths lives in `aligners.models.gappy_hsmm`.
"""

from __future__ import annotations

import gc
import resource
import time
from contextlib import contextmanager
from dataclasses import asdict

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf

from aligners.data.bitext import build_index
from aligners.data.heap import release_free_heap
from aligners.data.vocab import WordIds
from aligners.inference.choose import choose_decoding, score, sym_lines
from aligners.models.aligned import Decoding, parse_line
from aligners.models.gappy_hsmm.config import GappyHSMMConfig, PhrasalConfig
from aligners.models.gappy_hsmm.decode import prepared_batch
from aligners.models.gappy_hsmm.folder import PhrasalBundle
from aligners.models.gappy_hsmm.init import phrasal_stages
from aligners.models.gappy_hsmm.prepared import ReuseCache
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner
from aligners.models.hmm.folder import TrainedWordAligner
from aligners.training.hmm import LitEM, LitWordAligner, fit_em
from aligners.training.word_task import Fitted, Text, WordTask

__all__ = ["LitPhrasalAligner", "gappy_patterns", "task_config", "GappyTask", "train",
           "evaluate"]


class LitPhrasalAligner(LitEM):
    """LitEM of a PhrasalAligner (one process): each batch prepared once and reused."""

    def __init__(self, model, index, layouts: ReuseCache | None = None):
        super().__init__(model, index)
        self._layouts = layouts  # batch CompactLayouts from build_phrasal_aligner, or None
        self._prepared = ReuseCache()  # batch number -> PhrasalAligner.prepare(...)
        self.save_hyperparameters(asdict(model.config))

    def train_dataloader(self):
        if self.trainer is not None and self.trainer.world_size > 1:
            raise ValueError("task gappy-hsmm runs EM on one process: use trainer=cpu or "
                             "trainer=gpu with devices=1 (no count all-reduce yet)")
        return super().train_dataloader()

    def e_step(self, k: int) -> None:
        m = self.model
        m.accumulate(prepared_batch(m, self.index, k, self._prepared, self._layouts))


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
            for w in {lk[side] for lk in sure}:
                o = [lk[1 - side] for lk in sure if lk[side] == w]  # distinct
                if max(o) - min(o) + 1 > len(o):  # (so two or more, with a gap)
                    pats.append((side, w))
        if not pats:
            continue
        n += 1
        ok += all({lk for lk in sure if lk[side] == w} <= {lk for lk in pred if lk[side] == w}
                  <= poss for side, w in pats)
        for i, w in enumerate(p.src):
            if w == "not":
                js = {j for (a, j) in sure if a == i}
                if {"ne", "pas"} <= {p.tgt[j] for j in js}:
                    n_np += 1
                    ok_np += {(i, j) for j in js if p.tgt[j] in ("ne", "pas")} <= pred
                    break
    return n, ok, n_np, ok_np


def _warm_up_kernels() -> None:
    """Load the E-steps' compiled count scatters once (a tiny call each)."""
    from aligners.models._scatter import scatter_add2_, scatter_add_

    ids, v = torch.zeros(1, dtype=torch.int32), torch.zeros(1)
    scatter_add_(torch.zeros(1), ids, v)
    scatter_add2_(torch.zeros(1, 2), ids, v, v)


def task_config(m: DictConfig, n_pairs: int) -> GappyHSMMConfig:
    """The family's config of the task's `model` section for `n_pairs` pairs, the one that
    `aligners align --model gappy-hsmm` trains with: the start (sec. 7.1: Model 1 + word
    HMM, no agreement) is `model.word` with `model.start`'s iteration counts (Bansal et al.
    tuned them on dev, sec. 7.2), the phrasal model `model.phrasal`; a sized setting given
    as null takes the dev-chosen regimen of `n_pairs` pairs (`GappyHSMMConfig.for_pairs`,
    the one `REGIMENS` table). The section's keys are checked by `run.check`."""
    c = OmegaConf.to_container(m, resolve=True)
    start = WordAlignConfig(**{**c["word"], **(c.get("start") or {}), "agreement": False})
    return GappyHSMMConfig(start, PhrasalConfig(**(c.get("phrasal") or {})),
                           sized=()).for_pairs(n_pairs)


class _Table:
    """The scored rows of Table 1: each model decoded (its own `decode`) on the dev, test
    (rest), trial and all test pairs, with the decoding chosen on dev (and on trial for the
    all-pairs column) by the one chooser."""

    def __init__(self, text: Text, test: str, n_dev: int, grid: dict, run):
        tune, pairs = text.gold[text.tune], text.gold[test]
        self.gold = {"dev": tune + pairs[:n_dev], "test": pairs[n_dev:], "trial": tune,
                     "all": pairs}
        self.grid, self.run = grid, run
        self.metrics, self.rows = {}, []

    def report(self, name: str, model, seconds: float) -> None:
        g, grid = self.gold, self.grid
        parts = {k: model.decode([(p.src, p.tgt) for p in pairs], self.run)
                 for k, pairs in g.items()}
        for part in parts.values():
            if hasattr(part, "keep"):  # (phrasal) link matrices kept for the grid's decodings
                part.keep = {}
        dec, dev_aer = choose_decoding(parts["dev"], g["dev"], grid, model.METHODS)
        s = score(g["test"], sym_lines(parts["test"], Decoding(**dec)))
        dec_t, _ = choose_decoding(parts["trial"], g["trial"], grid, model.METHODS)
        lines_all = sym_lines(parts["all"], Decoding(**dec_t))
        s_all = score(g["all"], lines_all)
        vit = score(g["test"], sym_lines(parts["test"],
                                         Decoding("viterbi", 0.5, grid["heuristics"][0])))
        pats = gappy_patterns(g["all"], [parse_line(x)[0] for x in lines_all])
        f1 = 2 * s.precision * s.recall / max(1e-12, s.precision + s.recall)
        self.metrics[name] = {
            "precision": s.precision, "recall": s.recall, "f1": f1, "aer": s.aer,
            "dev_aer": dev_aer, "aer_447_trial_tuned": s_all.aer, "viterbi_aer": vit.aer,
            "train_seconds": seconds, "gappy_gold_pairs": pats[0], "gappy_right": pats[1],
            "ne_pas_gold_pairs": pats[2], "ne_pas_right": pats[3]}
        self.rows.append((name, dec, s, f1, s_all.aer, dec_t))
        print(f"[{name}] dev {dec} AER {dev_aer:.4f}; test P {s.precision:.4f} R {s.recall:.4f} "
              f"F1 {f1:.4f} AER {s.aer:.4f}; 447 ({dec_t}) AER {s_all.aer:.4f}; gappy {pats}",
              flush=True)

    def print(self) -> None:
        print(f"{'model':<22} {'prec':>6} {'rec':>6} {'F1':>6} {'AER':>7} {'AER447':>7}  decoding")
        for name, dec, s, f1, a447, dec_t in self.rows:
            print(f"{name:<22} {s.precision:6.4f} {s.recall:6.4f} {f1:6.4f} {s.aer:7.4f} "
                  f"{a447:7.4f}  dev:{dec} trial:{dec_t}")


class _Stages:
    """The regimen's stages on one training index, timed (wall and CPU seconds), each model
    reported to the table (when there is one) as soon as it is trained."""

    def __init__(self, cfg: DictConfig, index, vocab, table: _Table | None):
        self.cfg, self.index, self.vocab, self.table = cfg, index, vocab, table
        self.times, self.cpu = {}, {}

    @contextmanager
    def timed(self, name: str):
        """Adds the block's wall and CPU seconds to `times[name]`, `cpu[name]`."""
        t0, c0 = time.time(), time.process_time()
        yield
        self.times[name] = self.times.get(name, 0.0) + time.time() - t0
        self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0

    def _fit_word(self, word: WordAligner) -> None:
        fit_em(self.cfg, LitWordAligner.from_model(word, self.index), word.n_iterations)

    def baseline(self) -> None:
        """Stage 1: the word HMM by agreement (the baseline row)."""
        wcfg = {k: self.cfg.model.word[k] for k in self.cfg.model.word}
        with self.timed("word_hmm_agreement"):
            base = WordAligner.from_index(self.index,
                                          WordAlignConfig(**{**wcfg, "agreement": True}))
            self._fit_word(base)
        self.table.report("word_hmm_agreement", TrainedWordAligner(base, *self.vocab),
                          self.times["word_hmm_agreement"])
        del base
        release_free_heap()  # the baseline's freed tables and E-step buffers back to the OS

    def phrasal(self, config: GappyHSMMConfig, kinds):
        """Stages 2 and those of `kinds` ("contiguous", "gappy"): `phrasal_stages`, each
        model trained under Lightning (the shared Viterbi links' time is counted in each
        model's initialisation). Returns (the last model, the phrase statistics per model)."""
        stats = {}
        for name, model, st, layouts in phrasal_stages(self.index, config, self._fit_word,
                                                       kinds=kinds, timed=self.timed):
            self.times[name] += self.times["word_viterbi"]
            self.cpu[name] += self.cpu["word_viterbi"]
            init_s, init_cpu = self.times[name], self.cpu[name]
            with self.timed(name):
                lit = LitPhrasalAligner(model, self.index, layouts)
                fit_em(self.cfg, lit, model.config.iterations)
                lit._prepared.clear()  # the prepared batches of this model: not needed any more
            stats[name] = {**st, "init_seconds": init_s, "init_cpu_seconds": init_cpu}
            print(f"[{name}] {st}; init {init_s:.1f} s (CPU {init_cpu:.1f} s), total "
                  f"{self.times[name]:.1f} s (CPU {self.cpu[name]:.1f} s); "
                  f"loglik {lit.history}", flush=True)
            if self.table is not None:
                self.table.report(f"+{name}", PhrasalBundle(model, *self.vocab),
                                  self.times["word_hmm_no_agreement"] + self.times[name])
            model.clear_caches()  # its cached tables: not kept while the next model trains
            if name != kinds[-1]:  # its memory back before the next build
                model = None
            del lit
            gc.collect()  # the Lightning module and its trainer hold each other
            release_free_heap()
        return model, stats


class GappyTask(WordTask):
    """The gappy-hsmm family's hooks: the regimen's stages and Table 1 (`fit`)."""

    name = "gappy-hsmm"

    def fit(self, cfg: DictConfig, text: Text, run) -> Fitted:
        pl.seed_everything(int(cfg.seed), verbose=False)
        m = cfg.model
        src_ids, tgt_ids = WordIds(), WordIds()
        t0 = time.time()
        index = build_index(text.pairs, src_ids, tgt_ids, cells=int(m.batch_cells))
        src_ids.frozen = tgt_ids.frozen = True
        index_s = time.time() - t0
        table = None if text.tune is None else _Table(
            text, cfg.data.eval_splits[0], int(m.dev_from_test),
            OmegaConf.to_container(m.tune_grid), run)
        stages = _Stages(cfg, index, (src_ids, tgt_ids), table)
        _warm_up_kernels()  # one-off numba loads, not charged to the first timed stage
        if table is not None:
            stages.baseline()
        config = task_config(m, index.n_sentences)
        model, stats = stages.phrasal(config, ("gappy",) if table is None else
                                      ("contiguous", "gappy"))
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows = {} if table is None else table.metrics
        rows["run"] = {"index_seconds": index_s, "peak_rss_mb": rss_mb,
                       "start_ibm1_iterations": config.start.ibm1_iterations,
                       "start_hmm_iterations": config.start.hmm_iterations,
                       "phrasal_iterations": int(config.phrasal.iterations),
                       "training_pairs": index.n_sentences,
                       **{f"{k}_seconds": v for k, v in stages.times.items()},
                       **{f"{k}_cpu_seconds": v for k, v in stages.cpu.items()}}
        for name, st in stats.items():
            rows[f"phrases_{name}"] = {k: float(v) for k, v in st.items()}
        if table is not None:
            table.print()
        print(f"peak RSS {rss_mb:.0f} MB; times {stages.times}; CPU times {stages.cpu}")
        dec = None if table is None else Decoding(**table.rows[-1][1])  # the gappy model's
        return Fitted(PhrasalBundle(model, src_ids, tgt_ids), rows=rows, decoding=dec)


TASK = GappyTask()
train, evaluate = TASK.train, TASK.evaluate
