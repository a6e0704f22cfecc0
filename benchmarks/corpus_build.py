"""Time building the integer-encoded Hansards 200k corpus vs a naive Python-lists peer.

    nice -n 10 python benchmarks/corpus_build.py --repeats 3

Each method runs in a fresh subprocess (so peak RSS is its own), alternating, `--repeats`
times; medians and the ratio are printed. `ours` = `ParallelCorpus.build` (one streaming
pass, flat int32 arrays). `naive` = read every pair into Python lists of strings, count with
`Vocab.build`, then encode sentence by sentence into lists of ints and concatenate.
`pairs` = `ParallelCorpus.from_pairs(read_parallel(...))` (the streaming generic path).
All three must give the same token count and id checksum.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run_one(method: str, limit: int | None, out: str | None) -> dict:
    import itertools

    import numpy as np

    from aligners.data.corpus import ParallelCorpus
    from aligners.data.datasets import parallel_files
    from aligners.data.parallel import read_parallel
    from aligners.data.vocab import Vocab

    src, tgt = parallel_files("hansards-enfr", "train")
    t0 = time.perf_counter()
    if method in ("ours", "pairs"):
        if method == "ours" and limit is None:
            corpus = ParallelCorpus.build(src, tgt)
        else:
            corpus = ParallelCorpus.from_pairs(itertools.islice(read_parallel(src, tgt), limit))
        n, tokens = len(corpus), len(corpus.src_ids) + len(corpus.tgt_ids)
        check = int(corpus.src_ids.sum()) + int(corpus.tgt_ids.sum())
    else:
        pairs = list(itertools.islice(read_parallel(src, tgt), limit))
        sv = Vocab.build(s for s, _ in pairs)
        tv = Vocab.build(t for _, t in pairs)
        s_ids = [sv.encode(s) for s, _ in pairs]
        t_ids = [tv.encode(t) for _, t in pairs]
        s_flat = np.array([i for x in s_ids for i in x], np.int32)
        t_flat = np.array([i for x in t_ids for i in x], np.int32)
        n, tokens = len(pairs), len(s_flat) + len(t_flat)
        check = int(s_flat.sum()) + int(t_flat.sum())
    seconds = time.perf_counter() - t0
    res = {"method": method, "seconds": seconds, "pairs": n, "tokens": tokens, "check": check,
           "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if method == "ours" and out:
        t0 = time.perf_counter()
        corpus.save(out)
        res["save_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = ParallelCorpus.load(out)
        batches = sum(1 for _ in again.batches(max_tokens=4096))
        res["load_and_batch_s"] = time.perf_counter() - t0
        res["batches_4096_tokens"] = batches
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="first N pairs only")
    ap.add_argument("--out", default=None, help="also save/load/batch the corpus here")
    ap.add_argument("--one", choices=["ours", "pairs", "naive"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.limit, args.out)))
        return
    methods = ("ours", "pairs", "naive")
    results: dict[str, list[dict]] = {m: [] for m in methods}
    for _ in range(args.repeats):
        for method in methods:
            cmd = [sys.executable, __file__, "--one", method]
            if args.limit:
                cmd += ["--limit", str(args.limit)]
            if args.out and method == "ours":
                cmd += ["--out", args.out]
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                            text=True).stdout)
            results[method].append(res)
            print(json.dumps(res))
    med = {m: statistics.median(r["seconds"] for r in results[m]) for m in methods}
    rss = {m: statistics.median(r["maxrss_mb"] for r in results[m]) for m in methods}
    assert len({(r["tokens"], r["check"]) for m in methods for r in results[m]}) == 1
    for m in methods:
        print(f"{m:6s} median {med[m]:6.2f} s  peak RSS {rss[m]:5.0f} MB  "
              f"naive/{m} = {med['naive'] / med[m]:.2f}")


if __name__ == "__main__":
    main()
