"""Time the phrasal/gappy HSMM lattice against the word alignment-HMM lattice side by side.

Same B, I, J and float32 on one thread; the phrasal lattice adds L-word target segments
and P phrase states (contiguous + gappy). Prints the median seconds of posteriors (forward +
backward) of each and the ratio. `python benchmarks/phrasal.py --repeats 5`
"""

import argparse
import statistics
import time

import torch

from aligners.lattices.alignment_hmm import alignment_hmm_posteriors
from aligners.lattices.phrasal_hsmm import PhrasalPotentials, phrasal_hsmm_posteriors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=30)
    ap.add_argument("--segment", type=int, default=5)
    ap.add_argument("--phrases", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)
    B, I, J, L, P = a.batch, a.length, a.length, a.segment, a.phrases
    sl = torch.full((B,), I)
    tl = torch.full((B,), J)
    link = torch.rand(B, I, J, generator=g)
    null = torch.rand(B, J, generator=g)
    jumps = torch.rand(I + 1, I, generator=g)
    first = torch.randint(0, I - 2, (B, P), generator=g)
    pot = PhrasalPotentials(torch.randn(B, J, L, I, generator=g), torch.randn(B, J, generator=g),
                            torch.randn(B, J, P, generator=g), torch.randn(B, I, generator=g),
                            torch.randn(B, I, I, generator=g), torch.randn(B, I, generator=g),
                            torch.randn(B, I, generator=g), torch.randn(B, P, generator=g),
                            first, first + 2)
    times = {"word_hmm": [], "phrasal_hsmm": []}
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        alignment_hmm_posteriors(link, null, jumps, src_lengths=sl, tgt_lengths=tl, p0=0.2)
        times["word_hmm"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
        times["phrasal_hsmm"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"B={B} I=J={I} L={L} P={P} threads={a.threads} repeats={a.repeats}")
    for k, v in med.items():
        print(f"{k:<14} {v * 1000:9.1f} ms")
    print(f"ratio phrasal/word {med['phrasal_hsmm'] / med['word_hmm']:.2f}")


if __name__ == "__main__":
    main()
