"""Peak RSS and time of building the bitext index (the one data path) on Hansards 200k.

    nice -n 5 python benchmarks/corpus_build.py --repeats 2

Each run is a fresh subprocess (so peak RSS is its own), methods alternating, `--repeats`
times; medians and ratios are printed. `ours` = `aligners.data.bitext.build_index` over
`read_parallel` (what `aligners align` and the word task run: WordIds, length bucketing,
pair-id index), with glibc `malloc_trim` while indexing; `notrim` = the same code with the
heap trimming disabled (the peer that justifies keeping it). Both must give the same pair
table (count and key checksum).
"""

import argparse
import itertools
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

METHODS = ("ours", "notrim")


def run_one(method: str, limit: int | None, cache_dir: str | None) -> dict:
    import aligners.data.bitext as bitext
    from aligners.data.datasets import parallel_files
    from aligners.data.parallel import read_parallel
    from aligners.data.vocab import WordIds

    if method == "notrim":
        bitext._release_free_heap = lambda: None
    src, tgt = parallel_files("hansards-enfr", "train")
    t0 = time.perf_counter()
    pairs = itertools.islice(read_parallel(src, tgt), limit)
    index = bitext.build_index(pairs, WordIds(), WordIds(), cache_dir=cache_dir)
    return {"method": method, "seconds": time.perf_counter() - t0, "pairs": index.n_sentences,
            "pair_table": index.n_pairs, "batches": len(index), "check": int(index.keys.sum()),
            "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="first N pairs only")
    ap.add_argument("--cache-dir", default=None, help="keep the pair ids in .npy files here")
    ap.add_argument("--one", choices=METHODS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeats < 1 or (args.limit is not None and args.limit < 1):
        ap.error("--repeats and --limit must be positive")
    if args.one:
        print(json.dumps(run_one(args.one, args.limit, args.cache_dir)))
        return
    results: dict[str, list[dict]] = {m: [] for m in METHODS}
    for _ in range(args.repeats):
        for method in METHODS:
            cmd = [sys.executable, __file__, "--one", method]
            if args.limit:
                cmd += ["--limit", str(args.limit)]
            if args.cache_dir:
                cmd += ["--cache-dir", args.cache_dir]
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                            text=True).stdout)
            results[method].append(res)
            print(json.dumps(res))
    assert len({(r["pair_table"], r["check"]) for m in METHODS for r in results[m]}) == 1
    med = {m: statistics.median(r["seconds"] for r in results[m]) for m in METHODS}
    rss = {m: statistics.median(r["maxrss_mb"] for r in results[m]) for m in METHODS}
    for m in METHODS:
        print(f"{m:7s} median {med[m]:6.2f} s  peak RSS {rss[m]:6.0f} MB  "
              f"RSS {m}/ours = {rss[m] / rss['ours']:.2f}  time {m}/ours = "
              f"{med[m] / med['ours']:.2f}")


if __name__ == "__main__":
    main()
