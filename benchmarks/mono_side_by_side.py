"""Old vs new monolingual aligner throughput, side by side (alternating fresh processes).

    git archive 6ee507f | (mkdir -p /tmp/mono_base && tar -x -C /tmp/mono_base)
    nice -n 10 python benchmarks/mono_side_by_side.py --old /tmp/mono_base --limit 300

Each measurement is a fresh process (so "cold" really starts with empty word / word-pair /
WordNet caches; the WordNet database load itself is not timed) running the same snippet in
either tree: featurise cold, featurise warm (median of 3), decode (median of 3), random
weights (decoding cost does not depend on them). Trees alternate within each repeat; the
script prints medians over --repeats and the new/old ratios.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SNIPPET = r"""
import json, statistics, sys, time, torch
sys.path.insert(0, ".")
torch.set_num_threads(int(sys.argv[1]))
from aligners.data.datasets import load
from aligners.features.wordnet import get_wordnet
try:  # this tree (models/mono) or an older one (training/monolingual)
    from aligners.models.mono.aligner import build_model, featurise, predict
except ImportError:
    from aligners.training.monolingual import build_model, featurise, predict
get_wordnet()
pairs = load(sys.argv[3], sys.argv[4])
pairs = pairs[: int(sys.argv[5])] if int(sys.argv[5]) else pairs
model = build_model(kind=sys.argv[2])
torch.manual_seed(0)
with torch.no_grad():
    for p in model.parameters():
        p.normal_(0, 0.3)
def timed(fn):
    t0 = time.perf_counter(); out = fn(); return time.perf_counter() - t0, out
cold, ex = timed(lambda: featurise(pairs, model))
warm = statistics.median(timed(lambda: featurise(pairs, model))[0] for _ in range(3))
dec = statistics.median(timed(lambda: predict(model, ex, batch_size=128))[0] for _ in range(3))
print(json.dumps({"n": len(pairs), "cold": cold, "warm": warm, "decode": dec}))
"""


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="a checkout of the old commit")
    ap.add_argument("--new", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--data", default="msr06")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--kinds", nargs="+", default=["token", "phrase"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    env = dict(os.environ)
    env.setdefault("ALIGNERS_DATA", str(Path(args.new).resolve().parent / "shared" / "data"))
    runs: dict[tuple, list[dict]] = {}
    for r in range(args.repeats):
        trees = [("old", args.old), ("new", args.new)]
        for name, root in trees if r % 2 == 0 else trees[::-1]:
            for kind in args.kinds:
                for th in args.threads:
                    out = subprocess.run(
                        [sys.executable, "-c", SNIPPET, str(th), kind, args.data, args.split,
                         str(args.limit)], cwd=root, env=env, capture_output=True, text=True,
                        check=True)
                    runs.setdefault((kind, th, name), []).append(
                        json.loads(out.stdout.strip().splitlines()[-1]))
    table = {}
    for (kind, th, name), rs in sorted(runs.items()):
        n = rs[0]["n"]
        med = {k: statistics.median(x[k] for x in rs) for k in ("cold", "warm", "decode")}
        table[f"{kind} threads={th} {name}"] = {
            "featurise_cold_pairs_per_s": round(n / med["cold"], 1),
            "featurise_warm_pairs_per_s": round(n / med["warm"], 1),
            "decode_pairs_per_s": round(n / med["decode"], 1),
            "end_to_end_cold_pairs_per_s": round(n / (med["cold"] + med["decode"]), 1),
            "end_to_end_warm_pairs_per_s": round(n / (med["warm"] + med["decode"]), 1),
        }
    for kind in args.kinds:
        for th in args.threads:
            old, new = table[f"{kind} threads={th} old"], table[f"{kind} threads={th} new"]
            table[f"{kind} threads={th} ratio new/old"] = {
                k: round(new[k] / old[k], 2) for k in old}
    for k, v in table.items():
        print(k, json.dumps(v))
    return table


if __name__ == "__main__":
    main()
