"""The bitext path on the CPU, against an earlier commit in the same run: the whole
`aligners align --model hmm --ibm1-iterations 1 --hmm-iterations 1 --device cpu` command
on the first N Hansards training pairs + the 447 test pairs, at this checkout and at
`--base` (a temporary git worktree), alternating run by run; the medians of each phase of
the summary line (read, index, train, decode, write) and of the whole command, and whether
the two outputs are byte-identical. Rows -> benchmarks/results/bitext.json (task
"bitext-speed").

    python benchmarks/bitext_speed.py [--pairs 200000] [--base 96b3595] [--repeats 3]

Issue 34's CPU targets at 200k: index <= 2.0 s, read <= 1.5 s, the whole command faster
than at the base with byte-identical output. Time it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import add_output_args, make_row, run_side_by_side, write_rows  # noqa: E402

PHASES = ("read", "index", "train", "decode", "write")
FLAGS = ["--model", "hmm", "--ibm1-iterations", "1", "--hmm-iterations", "1",
         "--device", "cpu", "-v"]


def phases(stderr: str) -> dict[str, float]:
    """{phase: seconds} of the `aligners align:` summary line in `stderr`."""
    line = next(x for x in stderr.splitlines() if x.startswith("aligners align: "))
    return {k: float(v) for k, v in re.findall(r"(\w+) ([0-9.]+) s\b", line) if k in PHASES}


def _texts(work: Path, pairs: int) -> tuple[Path, Path, list]:
    from gpu import _hansards

    rows, test = _hansards(pairs)
    paths = work / "c.src", work / "c.tgt"
    for path, side in zip(paths, (0, 1), strict=True):
        path.write_text("".join(" ".join(p[side]) + "\n" for p in rows), encoding="utf-8")
    return *paths, test


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=200_000)
    ap.add_argument("--base", default="96b3595", help="the commit to compare with")
    ap.add_argument("--repeats", type=int, default=3)
    add_output_args(ap, "bitext")
    args = ap.parse_args(argv)
    from gpu import _test_aer

    from aligners.data.pharaoh import parse_pharaoh_line

    with tempfile.TemporaryDirectory(prefix="bitext-speed-") as tmp:
        work = Path(tmp)
        src, tgt, test = _texts(work, args.pairs)
        base = work / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            trees = {"this checkout": ROOT, f"main {args.base}": base}
            outs = {name: work / f"out{k}" for k, name in enumerate(trees)}
            # -P: each tree's code comes from PYTHONPATH, not from the working directory
            cmds = {name: [sys.executable, "-P", "-m", "aligners", "align", "-s", str(src),
                           "-t", str(tgt), "-o", str(outs[name]), *FLAGS] for name in trees}
            envs = {name: dict(os.environ, PYTHONPATH=str(tree))
                    for name, tree in trees.items()}
            run_side_by_side(cmds, repeats=1, envs=envs)  # warm-up: numba caches compiled
            runs = run_side_by_side(cmds, repeats=args.repeats, envs=envs)
            same = outs["this checkout"].read_bytes() == outs[f"main {args.base}"].read_bytes()
            lines = outs["this checkout"].read_text(encoding="utf-8").splitlines()
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                           check=False, capture_output=True)
    aer = _test_aer(test, [sorted(parse_pharaoh_line(x).sure) for x in lines[-len(test):]])
    rows = []
    for name, res in runs.items():
        ph = [phases(r["stderr"]) for r in res]
        med = {f"{k}_s": round(statistics.median(p.get(k, 0.0) for p in ph), 2)
               for k in PHASES}
        wall = statistics.median(r["wall_s"] for r in res)
        note = (f"{args.repeats} runs alternating with the other row's, after one warm-up "
                f"each; medians; outputs byte-identical: {'yes' if same else 'NO'}; test AER "
                f"{aer:.4f} (this checkout)")
        rows.append(make_row("bitext-speed", f"hansards-{args.pairs // 1000}k-test", name,
                             metrics={**med, "identical": int(same)}, wall_s=wall,
                             cpu_s=statistics.median(r["cpu_s"] for r in res),
                             peak_rss_mib=statistics.median(r["peak_rss_mib"] for r in res),
                             role="ours" if name == "this checkout" else "peer",
                             peer=None if name != "this checkout" else f"main {args.base}",
                             note=note))
        print(f"{name:<16} " + " ".join(f"{k} {med[k + '_s']:.2f}" for k in PHASES)
              + f"  whole {wall:.2f} s")
    print(f"byte-identical: {same}; test AER {aer:.4f}")
    if not args.no_save:
        print(write_rows("bitext", rows, args.results))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
