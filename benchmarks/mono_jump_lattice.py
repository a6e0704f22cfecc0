"""Dense vs bucketed (`JumpTransition`) label transition in the factored semi-Markov lattice.

    python benchmarks/mono_jump_lattice.py [--batch 8] [--points 31] [--targets 5,10,20,30,50]

For target lengths J (C = 1 + 3 J mono phrase states, Ls = Lt = 3, the 18 Yao et al. buckets),
times log Z forward + backward and Viterbi on the same random potentials, both paths side by
side in one process on one thread (best of `--repeat`). Prints one JSON line per J.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.lattices.factored_semimarkov import (  # noqa: E402
    factored_log_partition,
    factored_viterbi,
)
from aligners.lattices.jump_transition import JumpLayout, JumpTransition  # noqa: E402
from aligners.models.mono.states import state_table  # noqa: E402


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _one(J, B, N, K, repeat, g) -> dict:
    st = state_table(tgt_len=J, max_tgt_len=3)
    C = st["start"].shape[0]
    kind = torch.where(st["length"] == 0, 1, 2).expand(B, C)
    layout = JumpLayout.build(kind, st["start"].expand(B, C), st["end0"].expand(B, C))
    w = torch.randn(18, generator=g).requires_grad_()
    emit = torch.randn(B, N - 1, K, C, generator=g).requires_grad_()
    start = torch.randn(B, C, generator=g)
    lengths = torch.full((B,), N)

    def fb(dense):
        jt = JumpTransition(w, layout)
        factored_log_partition(emit, jt.dense() if dense else jt, start,
                               lengths=lengths).sum().backward()

    def vit(dense):
        jt = JumpTransition(w.detach(), layout)
        factored_viterbi(emit.detach(), jt.dense() if dense else jt, start, lengths=lengths)

    row = {"J": J, "C": C, "B": B, "points": N}
    for name, fn in (("logz_fwd_bwd", fb), ("viterbi", vit)):
        d = _best(lambda fn=fn: fn(True), repeat)
        j = _best(lambda fn=fn: fn(False), repeat)
        row.update({f"{name}_dense_ms": round(d * 1e3, 1), f"{name}_jump_ms": round(j * 1e3, 1),
                    f"{name}_speedup": round(d / j, 2)})
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--points", type=int, default=31, help="source words + 1")
    ap.add_argument("--targets", default="5,10,20,30,50")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    B, N, K = args.batch, args.points, 4
    for J in (int(x) for x in args.targets.split(",")):
        print(json.dumps(_one(J, B, N, K, args.repeat, g)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
