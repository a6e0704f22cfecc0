"""The Bayesian aligner's batched torch sampler vs its exact numba sampler: AER and time.

    python benchmarks/bayes_batched.py SET --samplers exact,batched --seeds 0,1,2 \
        [--pairs N] [--set key=value ...]

Each set is sampled on its own text (the gold set's pairs; for hansards-enfr the first N
training pairs + the 447 test + 37 trial pairs), with eflomal's default schedule and 3
samplers per direction (`BayesConfig` defaults, overridable by --set), links = argmax of the
averaged marginals per direction, symmetrized (intersect and grow-diag-final-and), AER on
the test pairs. Prints one line per (sampler, seed): AER, CPU and wall seconds of `align`.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _value(v: str):
    for kind in (int, float):
        try:
            return kind(v)
        except ValueError:
            pass
    return v


def main(argv=None) -> list[dict]:
    from aligners.data.datasets import iter_parallel, load
    from aligners.metrics import evaluate_alignments
    from aligners.models.bayes import BayesAligner, BayesConfig
    from aligners.models.bayes.decode import direction_links
    from aligners.symmetrize import symmetrize_corpus

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--samplers", default="exact,batched")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--pairs", type=int, default=0, help="Hansards training pairs")
    ap.add_argument("--set", nargs="*", default=[], help="BayesConfig overrides key=value")
    args = ap.parse_args(argv)
    over = {k: _value(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    test = load(args.dataset, "test")
    train = (list(itertools.islice(iter_parallel(args.dataset, "train"), args.pairs))
             if args.pairs else [])
    trial = load(args.dataset, "trial") if args.pairs else []
    pairs = train + [(p.src, p.tgt) for p in test + trial]
    gold = [p.alignment for p in test]
    lo, hi = len(train), len(train) + len(test)
    rows = []
    for kind in args.samplers.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            t0, w0 = time.process_time(), time.time()
            m = BayesAligner(BayesConfig(sampler=kind, **over)).align(pairs, seed=seed)
            cpu, wall = time.process_time() - t0, time.time() - w0
            f, r = direction_links(m, "fwd")[lo:hi], direction_links(m, "rev")[lo:hi]
            aer = {h: evaluate_alignments(gold, symmetrize_corpus(f, r, h),
                                          breakdowns=False).micro.aer
                   for h in ("intersect", "grow-diag-final-and")}
            row = dict(dataset=args.dataset, pairs=args.pairs, sampler=kind, seed=seed,
                       inter=aer["intersect"], gdfa=aer["grow-diag-final-and"], cpu=cpu,
                       wall=wall, sweeps=m.schedule, **over)
            rows.append(row)
            print(f"{args.dataset} n={args.pairs} {kind} {over} seed={seed} "
                  f"inter={row['inter']:.4f} gdfa={row['gdfa']:.4f} cpu={cpu:.1f}s "
                  f"wall={wall:.1f}s sweeps={m.schedule}", flush=True)
    return rows


if __name__ == "__main__":
    main()
