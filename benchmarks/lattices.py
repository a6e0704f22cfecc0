"""Chain lattices vs torch-struct 0.5: forward+backward time and peak memory, same inputs.

    nice -n 10 python benchmarks/lattices.py [--repeats 7] [--cap-gib 4] [--threads 2]

Cases: linear chain B=32 N=40 C=40; semi-Markov B=16 N=30 K=3 C=30; semi-Markov K=8
(torch-struct runs under an address-space cap so that its blow-up cannot take the machine
down; it is reported as "out of memory (cap)"). Time: median over ``--repeats`` runs of
log Z forward + backward (gradient = marginals), ours and torch-struct interleaved in one
process. Peak memory: in a fresh process per (case, implementation), growth of the
resident-set high-water mark during one forward+backward (``/proc/self/clear_refs`` resets
it first). Before timing, the script checks that both compute the same log Z.
If ``benchmarks/lattices_hmm.py`` exists, it is run afterwards so one command prints the
whole lattice table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = {
    "linear": {"kind": "linear", "B": 32, "N": 40, "C": 40},
    "semi3": {"kind": "semi", "B": 16, "N": 30, "K": 3, "C": 30},
    "semi8": {"kind": "semi", "B": 16, "N": 30, "K": 8, "C": 30},
}


def _inputs(case):
    import torch

    g = torch.Generator().manual_seed(0)
    if case["kind"] == "linear":
        shape = (case["B"], case["N"] - 1, case["C"], case["C"])
    else:
        shape = (case["B"], case["N"] - 1, case["K"], case["C"], case["C"])
    return torch.randn(*shape, generator=g)


def _runner(case, impl):
    """A function doing one log Z forward + backward; returns log Z (detached)."""
    warnings.filterwarnings("ignore")
    lp = _inputs(case)
    if impl == "ours":
        from aligners.lattices import linear_chain, semimarkov

        fn = linear_chain.log_partition if case["kind"] == "linear" else semimarkov.log_partition
    else:
        import torch_struct

        linear = case["kind"] == "linear"
        cls = torch_struct.LinearChainCRF if linear else torch_struct.SemiMarkovCRF

        def fn(x):
            return cls(x).partition

    def run():
        x = lp.clone().requires_grad_()
        z = fn(x)
        z.sum().backward()
        return z.detach()

    return run


def _status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def child_memory(case_name, impl, cap_gib):
    """Peak resident growth (bytes) of one forward+backward in this fresh process."""
    run = _runner(CASES[case_name], impl)
    if cap_gib:
        cap = _status("VmSize") + int(cap_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        Path("/proc/self/clear_refs").write_text("5")
        before = _status("VmRSS")
        run()
        peak = _status("VmHWM") - before
        return {"peak": peak}
    except (RuntimeError, MemoryError) as err:
        return {"error": f"out of memory ({cap_gib:g} GiB cap): {str(err)[:80]}"}


def child_time(case_name, repeats, with_theirs):
    import torch

    ours, theirs = _runner(CASES[case_name], "ours"), _runner(CASES[case_name], "theirs")
    out = {"ours": [], "theirs": []}
    z = ours()
    if with_theirs:
        zt = theirs()
        out["max_abs_diff_logz"] = float((z - zt).abs().max())
    for _ in range(repeats):
        t = time.perf_counter()
        ours()
        out["ours"].append(time.perf_counter() - t)
        if with_theirs:
            t = time.perf_counter()
            theirs()
            out["theirs"].append(time.perf_counter() - t)
    out["threads"] = torch.get_num_threads()
    return out


def _child(args_list):
    cmd = [sys.executable, __file__, *args_list]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr else "failed"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def _fmt_case(case):
    c = CASES[case]
    if c["kind"] == "linear":
        return f"linear chain B={c['B']} N={c['N']} C={c['C']}"
    return f"semi-Markov B={c['B']} N={c['N']} K={c['K']} C={c['C']}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cap-gib", type=float, default=4.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--child", choices=["time", "memory"])
    parser.add_argument("--case")
    parser.add_argument("--impl")
    parser.add_argument("--no-theirs", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.child == "time":
        print(json.dumps(child_time(args.case, args.repeats, not args.no_theirs)))
        return
    if args.child == "memory":
        print(json.dumps(child_memory(args.case, args.impl, args.cap_gib)))
        return

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}, {args.threads} threads, CPU, float32; "
          f"median of {args.repeats} forward+backward runs")
    print()
    print("| lattice | ours ms | torch-struct ms | speed-up | ours peak MiB "
          "| torch-struct peak MiB | memory ratio | max abs diff log Z |")
    print("|---|---|---|---|---|---|---|---|")
    common = ["--threads", str(args.threads), "--cap-gib", str(args.cap_gib)]
    for case in args.cases:
        mem_theirs = _child(["--child", "memory", "--case", case, "--impl", "theirs", *common])
        mem_ours = _child(["--child", "memory", "--case", case, "--impl", "ours", *common])
        theirs_ok = "peak" in mem_theirs
        timing = _child(["--child", "time", "--case", case, "--repeats", str(args.repeats),
                         *common, *([] if theirs_ok else ["--no-theirs"])])
        if "error" in timing:
            print(f"| {_fmt_case(case)} | error: {timing['error']} |")
            continue
        ours_ms = statistics.median(timing["ours"]) * 1e3
        ours_mb = mem_ours.get("peak", float("nan")) / 2**20
        if theirs_ok:
            theirs_ms = statistics.median(timing["theirs"]) * 1e3
            theirs_mb = mem_theirs["peak"] / 2**20
            row = (f"{theirs_ms:.1f} | {theirs_ms / ours_ms:.0f}x | {ours_mb:.1f} | "
                   f"{theirs_mb:.1f} | {ours_mb / theirs_mb:.3f} | "
                   f"{timing['max_abs_diff_logz']:.1e}")
        else:
            row = (f"{mem_theirs['error'].split(':')[0]} | - | {ours_mb:.1f} | - | - | -")
        print(f"| {_fmt_case(case)} | {ours_ms:.1f} | {row} |")
    sys.stdout.flush()
    hmm = Path(__file__).with_name("lattices_hmm.py")
    if hmm.exists():
        print()
        subprocess.run([sys.executable, str(hmm), "--threads", str(args.threads)], cwd=ROOT,
                       check=False)


if __name__ == "__main__":
    main()
