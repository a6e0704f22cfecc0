"""LCLR ILP inference throughput on MSRP pairs (issue 11: >= 200 pairs/s on 2 cores).

`python benchmarks/lclr.py [--pairs 400] [--workers 2]`: builds the paraphrase ILPs of the
first N MSRP test pairs (Link Grammar parses from the JSON-lines cache, parsing what is
missing), scores the variables with the two-stage heuristic weights and solves every ILP
(a) with HiGHS presolve off (our default) and (b) with presolve on (scipy's default, the
peer), one after the other in the same run; then (a) again on `--workers` processes. Prints
per-pair solver time percentiles (wall and CPU) and pairs/s. Timings on a shared machine:
quote the ratio of (a) to (b).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from aligners.data.datasets import load
from aligners.features.parse import default_cache_dir, parse_all
from aligners.inference.ilp import solve_ilp
from aligners.models.lclr import variable_scores
from aligners.models.lclr_tasks import make_task


def _problems(n: int):
    pairs = load("msrp", "test")[:n]
    texts = [p.text1 for p in pairs] + [p.text2 for p in pairs]
    graphs = parse_all(texts, cache=default_cache_dir() / "parses" / "lg-msrp-test.jsonl")
    task = make_task("paraphrase")
    task.graphs = dict(zip(texts, graphs, strict=True))
    insts = [task.instance(p.text1, p.text2) for p in pairs]
    w = task.heuristic_weights()
    w = np.pad(w, (0, len(task.features) - len(w)))
    return [(variable_scores(x, w), task.constraints(x)) for x in insts]


def _solve_all(problems, presolve: bool):
    wall, cpu = [], []
    for scores, cons in problems:
        t0, c0 = time.perf_counter(), time.process_time()
        solve_ilp(scores, cons, presolve=presolve)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return np.array(wall), np.array(cpu)


def _chunk(args):
    problems, presolve = args
    t0 = time.perf_counter()
    _solve_all(problems, presolve)
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
    args = ap.parse_args()
    problems = _problems(args.pairs)
    nv = [c.num_variables for _, c in problems]
    nc = [c.num_constraints for _, c in problems]
    print(f"{len(problems)} MSRP test pairs: variables mean {np.mean(nv):.0f} max {max(nv)}, "
          f"constraints mean {np.mean(nc):.0f} max {max(nc)}")
    _solve_all(problems[:20], False)  # warm-up
    _row("presolve off (ours)", *_solve_all(problems, False))
    _row("presolve on (peer)", *_solve_all(problems, True))
    k = args.workers
    parts = [(problems[i::k], False) for i in range(k)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(k) as ex:
        list(ex.map(_chunk, parts))
    wall = time.perf_counter() - t0
    print(f"presolve off, {k} processes: {len(problems) / wall:.1f} pairs/s wall "
          f"(incl. process start-up)")


if __name__ == "__main__":
    main()
