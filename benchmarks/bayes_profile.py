"""Phase profile of the Bayesian aligner (exact sampler) on a text pair.

    python benchmarks/bayes_profile.py SRC TGT [THREADS] [REL_ITERATIONS]

Wraps the encoder, the count builder and every sweep call with wall-clock timers and
prints seconds per phase (sweeps split by stage and by whether they accumulate marginals),
then decoding (argmax links of both directions) and gdfa symmetrization. Use THREADS=1 so
that the phase times add up to the total.
"""

from __future__ import annotations

import inspect
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

__all__ = ["main"]


def main(argv: list[str]) -> None:
    import aligners.models.bayes.model as model_mod
    from aligners.data.parallel import read_parallel
    from aligners.models.bayes import sampler as kernels
    from aligners.models.bayes.decode import direction_links
    from aligners.symmetrize import symmetrize_corpus

    src, tgt = argv[0], argv[1]
    threads = int(argv[2]) if len(argv) > 2 else 1
    rel = float(argv[3]) if len(argv) > 3 else 1.0
    times: dict[str, float] = {}
    counts: dict[str, int] = {}

    def add(name: str, t0: float) -> None:
        times[name] = times.get(name, 0.0) + time.perf_counter() - t0
        counts[name] = counts.get(name, 0) + 1

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            out = fn(*a, **k)
            add(name, t0)
            return out
        return wrapper

    names = list(inspect.signature(kernels.sweep.py_func).parameters)
    i_acc, i_stage = names.index("accumulate"), names.index("stage")
    sweep = kernels.sweep

    def sweep_timed(*a):
        t0 = time.perf_counter()
        sweep(*a)
        add(f"sweep stage {a[i_stage]}{' (accumulating)' if a[i_acc] else ''}", t0)

    model_mod.encode_bitext = timed("encode (pair table + ids)", model_mod.encode_bitext)
    model_mod._k.add_counts = timed("add_counts", kernels.add_counts)
    model_mod._k.sweep = sweep_timed
    aligner = model_mod.BayesAligner(model_mod.BayesConfig(threads=threads,
                                                           rel_iterations=rel))
    t0 = time.perf_counter()
    marg = aligner.align(read_parallel(src, tgt), seed=0)
    add("align (total)", t0)
    t0 = time.perf_counter()
    fwd, rev = direction_links(marg, "fwd"), direction_links(marg, "rev")
    add("decode (argmax, both directions)", t0)
    t0 = time.perf_counter()
    symmetrize_corpus(fwd, rev, "grow-diag-final-and")
    add("symmetrize gdfa", t0)
    print(f"{marg.corpus.n_sentences} pairs, {int(marg.corpus.cell_off[-1])} cells, "
          f"{marg.corpus.n_pairs} distinct pairs, schedule {marg.schedule}, threads {threads}, "
          f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    for name, sec in times.items():
        print(f"{name:<36} {sec:9.2f} s  ({counts[name]} calls)")


if __name__ == "__main__":
    main(sys.argv[1:])
