"""Choose the Bayesian aligner's default decoding on the Hansards trial split (never test).

    python benchmarks/bayes_decoding.py                  # 20k training pairs, seeds 0-2
    python benchmarks/bayes_decoding.py --pairs 2000 --seeds 0

Samples the first N Hansards training pairs + the 447 test + 37 trial pairs once per seed
(the default BayesConfig) and scores every candidate decoding on the trial pairs (the
choice) and on the test pairs (for reference only): the argmax or a per-direction threshold
with an atools heuristic, and the mean of the two directions' marginals at each threshold.
Prints one line per candidate: mean trial AER, mean and sd of the test AER over the seeds.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CANDIDATES = ([("viterbi", 0.5, h) for h in ("intersect", "grow-diag", "grow-diag-final-and")]
              + [("posterior", t, h) for t in (0.3, 0.4, 0.5)
                 for h in ("intersect", "grow-diag-final-and")]
              + [("mean", t, "none") for t in (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)])


def main(argv=None) -> None:
    from aligners.data.datasets import iter_parallel, load
    from aligners.inference.choose import score, sym_lines
    from aligners.models.aligned import Decoding
    from aligners.models.bayesian import BayesAligner, BayesConfig
    from aligners.models.bayesian.folder import BayesAligned

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20_000, help="Hansards training pairs")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated sampler seeds")
    args = ap.parse_args(argv)
    trial, test = load("hansards-enfr", "trial"), load("hansards-enfr", "test")
    pairs = list(itertools.islice(iter_parallel("hansards-enfr", "train"), args.pairs))
    spans = {}
    for name, gold in (("test", test), ("trial", trial)):
        spans[name] = (len(pairs), len(pairs) + len(gold))
        pairs += [(p.src, p.tgt) for p in gold]
    aer = {c: {"trial": [], "test": []} for c in CANDIDATES}
    for seed in (int(s) for s in args.seeds.split(",")):
        marg = BayesAligner(BayesConfig()).align(pairs, seed=seed)
        for c in CANDIDATES:
            for name, gold in (("trial", trial), ("test", test)):
                lines = sym_lines(BayesAligned(marg, spans[name]), Decoding(*c))
                aer[c][name].append(score(gold, lines).aer)
        print(f"seed {seed} sampled", flush=True)
    for c, runs in aer.items():
        sd = statistics.stdev(runs["test"]) if len(runs["test"]) > 1 else 0.0
        print(f"{c[0]:<10}{c[1]:<6}{c[2]:<22} trial {statistics.mean(runs['trial']):.4f}  "
              f"test {statistics.mean(runs['test']):.4f} (sd {sd:.4f})")
    best = min(CANDIDATES, key=lambda c: statistics.mean(aer[c]["trial"]))
    print(f"chosen on trial: {best}")


if __name__ == "__main__":
    main()
