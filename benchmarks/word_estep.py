"""The word aligner's HMM E-step, old (out-of-place) vs new (in-place, time-major) lattice
path, alternated in one process on the same batches and parameters.

    python benchmarks/word_estep.py --pairs 20000 --repeats 3 [--threads 1]

Builds the index of the first N Hansards training pairs, runs one Model 1 iteration, then
times full HMM E-steps (both directions, agreement counts, all batches) with
`aligners.lattices.alignment_hmm`'s in-place path and with its differentiable out-of-place
path (the code before the in-place path existed), alternating; prints medians, their ratio
and the largest difference of the expected lexical counts.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> dict:
    import aligners.lattices.alignment_hmm as ah
    from aligners.data.bitext import build_index
    from aligners.data.datasets import iter_parallel
    from aligners.data.vocab import WordIds
    from aligners.models.word.agreement import WordAlignConfig, WordAligner

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = itertools.islice(iter_parallel("hansards-enfr", "train"), args.pairs)
    index = build_index(pairs, WordIds(), WordIds())
    model = WordAligner.from_index(index, WordAlignConfig(ibm1_iterations=1, hmm_iterations=1))
    for k in range(len(index)):
        model.accumulate(index.batch(k), stage="ibm1")
    model.m_step(stage="ibm1")
    new = ah._posteriors_inplace
    times: dict[str, list[float]] = {"old": [], "new": []}
    counts = {}
    try:
        for _ in range(args.repeats):
            for name in ("old", "new"):
                ah._posteriors_inplace = ah._posteriors_differentiable if name == "old" else new
                t0 = time.perf_counter()
                for k in range(len(index)):
                    model.accumulate(index.batch(k), stage="hmm")
                times[name].append(time.perf_counter() - t0)
                counts[name] = model.c_fwd.clone()
                model.reset_counts()
    finally:
        ah._posteriors_inplace = new
    old, cur = statistics.median(times["old"]), statistics.median(times["new"])
    diff = float((counts["old"] - counts["new"]).abs().max())
    print(f"{index.n_sentences} pairs, {len(index)} batches, {args.threads} thread(s): HMM "
          f"E-step old {old:.2f} s, new {cur:.2f} s (medians of {args.repeats}), new/old "
          f"{cur / old:.2f}; max |count difference| {diff:.3g}")
    print(f"runs old {[round(t, 2) for t in times['old']]} new "
          f"{[round(t, 2) for t in times['new']]}")
    return {"old_s": old, "new_s": cur, "max_count_diff": diff}


if __name__ == "__main__":
    main()
