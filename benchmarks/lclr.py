"""LCLR ILP inference throughput on MSRP pairs (issue 11: >= 200 pairs/s on 2 cores).

`python benchmarks/lclr.py [--pairs 400] [--workers 2]`: builds the paraphrase ILPs of the
first N MSRP test pairs (Link Grammar parses from the JSON-lines cache, parsing what is
missing), scores the variables with the two-stage heuristic weights (and, with
`--weights RUN/lclr`, with a trained model's weights too) and solves every ILP (a) LP
relaxation first through highspy (our default, `method="lp_first"`), (b) scipy's
`milp` with presolve off (the previous default) and (c) `milp` with presolve on (scipy's
default), one after the other in the same run; then (a) again on `--workers` processes.
Prints per-pair solver time percentiles (wall and CPU), pairs/s and how often the LP vertex
was integral. Timings on a shared machine: quote the ratios of (a) to (b) and (c).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from aligners.data.datasets import load
from aligners.features.parse import default_cache_dir, parse_all
from aligners.ilp import solve_ilp
from aligners.models.lclr import variable_scores
from aligners.models.lclr_tasks import make_task


def _problems(n: int, weights: str | None = None):
    pairs = load("msrp", "test")[:n]
    texts = [p.text1 for p in pairs] + [p.text2 for p in pairs]
    graphs = parse_all(texts, cache=default_cache_dir() / "parses" / "lg-msrp-test.jsonl")
    if weights:
        import aligners
        clf = aligners.load(weights)
        task, w = clf.task, clf.weights
    else:
        task = make_task("paraphrase")
    task.graphs = dict(zip(texts, graphs, strict=True))
    insts = [task.instance(p.text1, p.text2) for p in pairs]
    if not weights:
        w = task.heuristic_weights()
        w = np.pad(w, (0, len(task.features) - len(w)))
    return [(variable_scores(x, w), task.constraints(x)) for x in insts]


def _solve_all(problems, method: str, presolve: bool, out=None):
    wall, cpu = [], []
    for scores, cons in problems:
        t0, c0 = time.perf_counter(), time.process_time()
        r = solve_ilp(scores, cons, presolve=presolve, method=method)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if out is not None:
            out.append(r)
    return np.array(wall), np.array(cpu)


def _chunk(args):
    problems, method, presolve = args
    t0 = time.perf_counter()
    _solve_all(problems, method, presolve)
    return time.perf_counter() - t0


def _row(name, wall, cpu):
    p = lambda a, q: 1e3 * np.percentile(a, q)  # noqa: E731
    print(f"{name:<22} pairs/s wall {len(wall) / wall.sum():7.1f}  cpu {len(cpu) / cpu.sum():7.1f}"
          f" | ms wall p50 {p(wall, 50):6.2f} p90 {p(wall, 90):6.2f} p99 {p(wall, 99):7.2f} "
          f"max {1e3 * wall.max():7.2f} | ms cpu p50 {p(cpu, 50):6.2f} p90 {p(cpu, 90):6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=400)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--weights", default=None, help="a saved LCLR model folder (RUN/lclr)")
    args = ap.parse_args()
    problems = _problems(args.pairs, args.weights)
    nv = [c.num_variables for _, c in problems]
    nc = [c.num_constraints for _, c in problems]
    print(f"{len(problems)} MSRP test pairs: variables mean {np.mean(nv):.0f} max {max(nv)}, "
          f"constraints mean {np.mean(nc):.0f} max {max(nc)}"
          + (f"; weights {args.weights}" if args.weights else "; heuristic weights"))
    _solve_all(problems[:20], "lp_first", False)  # warm-up
    _solve_all(problems[:20], "milp", False)
    res: list = []
    _row("LP first (ours)", *_solve_all(problems, "lp_first", False, res))
    ref: list = []
    _row("milp presolve off", *_solve_all(problems, "milp", False, ref))
    _row("milp presolve on", *_solve_all(problems, "milp", True))
    frac = np.mean([r.lp_integral for r in res])
    same = all(abs(a.value - b.value) <= 1e-9 * max(1.0, abs(b.value))
               for a, b in zip(res, ref, strict=True))
    print(f"LP vertex integral on {100 * frac:.1f}% of the pairs; optimum equal to milp's on "
          f"every pair: {same}")
    k = args.workers
    parts = [(problems[i::k], "lp_first", False) for i in range(k)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(k) as ex:
        list(ex.map(_chunk, parts))
    wall = time.perf_counter() - t0
    print(f"LP first, {k} processes: {len(problems) / wall:.1f} pairs/s wall "
          f"(incl. process start-up)")


if __name__ == "__main__":
    main()
