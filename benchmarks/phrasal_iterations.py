"""Dev sweep of the phrasal regimen's iteration counts (Bansal et al. 2011, sec. 7.2: "the
number of iterations of each Model 1, HMM, and Gappy" were tuned on the development set).

Builds the `train.py experiment=bansal2011_hansards` training text (the first `--pairs`
Hansards pairs, 0 = all 200k, + test and trial text, lowercased) and its dev split (the 37
trial pairs + the first 100 test pairs; the other 347 test pairs are never decoded here).
Trains Model 1 (`--ibm1` iterations) + the word HMM without agreement, and at each HMM
iteration count in `--hmm` (ascending; the HMM is trained on from one count to the next)
builds the phrasal model (`--model gappy|contiguous`) and trains it for `--phrasal`
iterations by agreement, scoring dev after each one with the task's decoding grid
(`--model word`: the word HMM by agreement instead, dev scored at each HMM count). Prints
one JSON line per (hmm, phrasal) point: dev AER and its decoding, and the CPU seconds of
the pipeline up to that point (word stage + mining Viterbi + build + phrasal iterations),
and the word HMM by agreement's CPU seconds (the baseline, `--baseline`) for the ratio.

    python benchmarks/phrasal_iterations.py --hmm 3 4 5 --phrasal 5 --out sweep.jsonl
"""

import argparse
import copy
import dataclasses
import json
import time

import torch
from omegaconf import OmegaConf

from aligners.data.bitext import build_index
from aligners.data.vocab import WordIds
from aligners.models.phrasal import PhrasalConfig, build_phrasal_aligner
from aligners.models.phrasal.decode import fit_phrasal, link_matrices
from aligners.models.phrasal.init import word_viterbi
from aligners.models.word.agreement import WordAlignConfig, WordAligner
from aligners.training.phrasal_align import _data, _warm_up_kernels, choose


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=0, help="training pairs (0 = all)")
    ap.add_argument("--ibm1", type=int, default=5)
    ap.add_argument("--hmm", type=int, nargs="+", default=[3, 4, 5])
    ap.add_argument("--phrasal", type=int, default=5, help="phrasal iterations (max)")
    ap.add_argument("--model", choices=("gappy", "contiguous", "word"), default="gappy",
                    help="word: the word HMM by agreement itself (the baseline row), dev "
                         "scored at each --hmm count")
    ap.add_argument("--baseline", action="store_true",
                    help="also time the word HMM by agreement (5 + 5 iterations)")
    ap.add_argument("--vary", nargs="+", default=None, metavar=("FIELD", "VALUE"),
                    help="a PhrasalConfig field and its values: one phrasal model per value "
                         "at each HMM count (e.g. --vary p0 0.2 0.3 0.4)")
    ap.add_argument("--out", default=None, help="append JSON lines here too")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    m = OmegaConf.load("configs/model/phrasal_hsmm.yaml")
    data = OmegaConf.load("configs/data/hansards_200k.yaml")
    data.train_limit = a.pairs if a.pairs > 0 else None
    stream, test, trial = _data(OmegaConf.create({"data": data}))  # the task's training text
    dev = trial + test[: int(m.dev_from_test)]
    src_ids, tgt_ids = WordIds(), WordIds()
    index = build_index(stream, src_ids, tgt_ids, cells=int(m.batch_cells))
    src_ids.frozen = tgt_ids.frozen = True
    dev_ix = build_index([(p.src, p.tgt) for p in dev], src_ids, tgt_ids, keys=index.keys)
    grid = OmegaConf.to_container(m.tune_grid)
    wcfg = {**{k: m.word[k] for k in m.word}, "ibm1_iterations": a.ibm1}
    pcfg = {k: v for k, v in OmegaConf.to_container(m.phrasal).items()
            if k in PhrasalConfig.__dataclass_fields__}
    field, values = (a.vary[0], a.vary[1:]) if a.vary else (None, [None])
    if field is not None and (field not in PhrasalConfig.__dataclass_fields__ or not values):
        ap.error(f"--vary: {field!r} is not a PhrasalConfig field, or no values given")
    kind = type(PhrasalConfig.__dataclass_fields__[field].default) if field else None
    _warm_up_kernels()

    def emit(row):
        line = json.dumps(row)
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")

    base_cpu = None
    if a.baseline:
        c0 = time.process_time()
        WordAligner.from_index(index, WordAlignConfig(**{**wcfg, "ibm1_iterations": 5,
                                                         "hmm_iterations": 5,
                                                         "agreement": True})).fit(index)
        base_cpu = time.process_time() - c0
        emit({"baseline_word_hmm_agreement_cpu": base_cpu})
    word = WordAligner.from_index(index, WordAlignConfig(**{**wcfg, "hmm_iterations": 0,
                                                            "agreement": a.model == "word"}))
    word_cpu = 0.0
    for h in sorted(a.hmm):
        c0 = time.process_time()
        word.config = dataclasses.replace(word.config, hmm_iterations=h)
        word.fit(index)  # on from the previous count
        word_cpu += time.process_time() - c0
        if a.model == "word":
            vmats = link_matrices(word, dev_ix, viterbi=True)
            dec, aer = choose(link_matrices(word, dev_ix), vmats, dev, grid)
            emit({"ibm1": a.ibm1, "hmm": h, "model": "word", "dev_aer": round(aer, 5),
                  "decoding": dec, "word_cpu": round(word_cpu, 2)})
            continue
        c0 = time.process_time()
        start = copy.deepcopy(word)
        vit = word_viterbi(start, index)
        vit_cpu = time.process_time() - c0
        for value in values:
            one = {} if field is None else {field: kind(value)}
            _phrasal_points(a, index, start, vit, vit_cpu, {**pcfg, **one}, dev_ix, dev, grid,
                            word_cpu, base_cpu, h, one, emit)
        del vit, start


def _phrasal_points(a, index, start, vit, vit_cpu, pcfg, dev_ix, dev, grid, word_cpu,
                    base_cpu, h, one, emit) -> None:
    """Build one phrasal model from `start` and train it, scoring dev after each iteration."""
    c0 = time.process_time()
    layouts = []
    model, _ = build_phrasal_aligner(
        start, index, PhrasalConfig(**{**pcfg, "gappy": a.model == "gappy",
                                       "iterations": 0}), vit=vit, layouts=layouts)
    cpu = vit_cpu + time.process_time() - c0
    prepared = {}
    for it in range(1, a.phrasal + 1):
        c0 = time.process_time()
        model.config.iterations = it
        fit_phrasal(model, index, prepared=prepared, layouts=layouts)
        cpu += time.process_time() - c0
        mats = link_matrices(model, dev_ix)
        vmats = link_matrices(model, dev_ix, viterbi=True)
        dec, aer = choose(mats, vmats, dev, grid)
        row = {"ibm1": a.ibm1, "hmm": h, "model": a.model, **one, "phrasal_iterations": it,
               "dev_aer": round(aer, 5), "decoding": dec,
               "word_cpu": round(word_cpu, 2), "phrasal_cpu": round(cpu, 2),
               "pipeline_cpu": round(word_cpu + cpu, 2)}
        if base_cpu:
            row["ratio"] = round((word_cpu + cpu) / base_cpu, 3)
        emit(row)
    model.clear_caches()
    del model, prepared, layouts


if __name__ == "__main__":
    main()
