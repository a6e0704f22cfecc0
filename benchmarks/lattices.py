"""Lattices vs torch-struct 0.5 on the CPU: forward + backward time and peak memory on the
same inputs; rows -> benchmarks/results/lattices.json.

    python benchmarks/lattices.py --threads 1 --repeats 7
    python benchmarks/lattices.py --threads 1 --cases hmm        # the alignment HMM only
    python benchmarks/lattices.py --quick                        # tiny sizes, nothing saved

Cases: ``linear`` (linear chain B32 N40 C40), ``semi3`` / ``semi8`` (semi-Markov B16 N30 K3 / K8
C30): ours = ``aligners.lattices.linear_chain`` / ``semimarkov`` ``log_partition``, torch-struct
= ``LinearChainCRF`` / ``SemiMarkovCRF`` ``partition``, each + its backward (the gradient = the
marginals). ``hmm``: the Och-Ney alignment HMM B64 I=J=40 (C = 80 states), ours =
``aligners.lattices.hmm_posteriors`` (explicit scaled forward-backward), torch-struct =
``LinearChainCRF`` on the same potentials materialised as (B, J-1, C, C); its O(B·J·C³) scan
runs on ``--ts-batch`` pairs only (its time also given scaled to B in the note).

Time: median over ``--repeats`` interleaved calls in one process (harness.measure_interleaved)
after checking that both give the same log Z. Peak memory: harness.peak_growth_mib of one call
in a fresh process per (case, implementation); torch-struct runs under an address-space cap
(``--cap-gib``) so that its blow-up cannot take the machine down ("out of memory").
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    ROOT,
    add_output_args,
    make_row,
    measure_interleaved,
    peak_growth_mib,
    write_rows,
)

sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore", message=".*arg_constraints.*")

__all__ = ["CASES", "alignment_hmm_inputs", "main"]

CASES = {"linear": {"kind": "linear", "B": 32, "N": 40, "C": 40},
         "semi3": {"kind": "semi", "B": 16, "N": 30, "K": 3, "C": 30},
         "semi8": {"kind": "semi", "B": 16, "N": 30, "K": 8, "C": 30},
         "hmm": {"kind": "hmm", "B": 64, "I": 40}}
QUICK = {"linear": {"B": 2, "N": 5, "C": 3}, "semi3": {"B": 2, "N": 5, "C": 3},
         "semi8": {"B": 2, "N": 6, "K": 4, "C": 3}, "hmm": {"B": 4, "I": 3}}


def alignment_hmm_inputs(*, batch, src_len, tgt_len, seed=0, dtype=None):
    """Och-Ney alignment-HMM potentials: init (B,C), trans (B,C,C), emit (B,J,C), C = 2I.

    Word states 0..I-1, NULL states I..2I-1 (NULL i remembers position i). Jumps from word
    (or NULL) i to word i' score by a random jump-width table; to NULL i with p0 = 0.2.
    """
    import torch

    dtype = dtype or torch.float32
    g = torch.Generator().manual_seed(seed)
    B, I, J = batch, src_len, tgt_len
    C = 2 * I
    jump = torch.randn(B, 2 * I - 1, generator=g, dtype=dtype) - 0.1 * torch.arange(
        -(I - 1), I, dtype=dtype).abs()
    src = torch.arange(I)
    width = (src[None, :] - src[:, None]) + (I - 1)  # [i, i'] -> index of i' - i
    word = jump[:, width].log_softmax(-1) + torch.log(torch.tensor(0.8, dtype=dtype))
    trans = torch.full((B, C, C), float("-inf"), dtype=dtype)
    trans[:, :I, :I] = word
    trans[:, I:, :I] = word
    diag = torch.arange(I)
    trans[:, diag, I + diag] = torch.log(torch.tensor(0.2, dtype=dtype))
    trans[:, I + diag, I + diag] = torch.log(torch.tensor(0.2, dtype=dtype))
    init = torch.cat([torch.full((B, I), -torch.log(torch.tensor(2.0 * I)).item())] * 2, 1)
    emit_word = torch.randn(B, J, I, generator=g, dtype=dtype).mul(2).log_softmax(-1)
    emit_null = torch.randn(B, J, 1, generator=g, dtype=dtype).sub(3).expand(B, J, I)
    return init.to(dtype), trans, torch.cat([emit_word, emit_null], -1)


def _label(c: dict) -> str:
    if c["kind"] == "linear":
        return f"linear chain B{c['B']} N{c['N']} C{c['C']}"
    if c["kind"] == "semi":
        return f"semi-Markov B{c['B']} N{c['N']} K{c['K']} C{c['C']}"
    return f"alignment HMM B{c['B']} I=J={c['I']} C{2 * c['I']}"


def _runners(c: dict, ts_batch: int):
    """(ours, theirs): functions doing one log Z forward + backward, returning log Z."""
    import torch

    if c["kind"] == "hmm":
        from torch_struct import LinearChainCRF

        from aligners.lattices import hmm_posteriors

        init, trans, emit = alignment_hmm_inputs(batch=c["B"], src_len=c["I"], tgt_len=c["I"])
        sub = [x[:ts_batch] for x in (init, trans, emit)]
        edge = (sub[1][:, None] + sub[2][:, 1:, None, :]).transpose(-1, -2).contiguous()
        edge[:, 0] += (sub[0] + sub[2][:, 0])[:, None, :]  # torch-struct: [b, n, next, prev]

        def theirs():
            x = edge.clone().requires_grad_()
            z = LinearChainCRF(x).partition
            z.sum().backward()
            return z.detach()

        return (lambda: hmm_posteriors(init, trans, emit).log_likelihood[:ts_batch]), theirs
    import torch_struct

    from aligners.lattices import linear_chain, semimarkov

    g = torch.Generator().manual_seed(0)
    shape = (c["B"], c["N"] - 1, *([c["K"]] if c["kind"] == "semi" else []), c["C"], c["C"])
    lp = torch.randn(*shape, generator=g)
    mine = linear_chain.log_partition if c["kind"] == "linear" else semimarkov.log_partition
    cls = torch_struct.LinearChainCRF if c["kind"] == "linear" else torch_struct.SemiMarkovCRF

    def run(fn):
        def go():
            x = lp.clone().requires_grad_()
            z = fn(x)
            z.sum().backward()
            return z.detach()
        return go

    return run(mine), run(lambda x: cls(x).partition)


def _child_memory(case: dict, impl: str, cap_gib: float, ts_batch: int) -> dict:
    """In a fresh process: peak growth of one call, or the out-of-memory error."""
    ours, theirs = _runners(case, ts_batch)
    if impl == "theirs" and cap_gib:
        cap = int(Path("/proc/self/status").read_text().split("VmSize:")[1].split()[0]) * 1024
        cap += int(cap_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        return {"peak_mib": peak_growth_mib(ours if impl == "ours" else theirs)}
    except (RuntimeError, MemoryError):
        return {"error": f"out of memory ({cap_gib:g} GiB address-space cap)"}


def _memory(name: str, impl: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", impl, "--cases", name, "--threads",
           str(args.threads), "--cap-gib", str(args.cap_gib), "--ts-batch", str(args.ts_batch),
           *(["--quick"] if args.quick else [])]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        return {"error": "failed: " + (res.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_case(name: str, args) -> list[dict]:
    import torch

    case = {**CASES[name], **(QUICK[name] if args.quick else {})}
    label = _label(case)
    mem = {impl: _memory(name, impl, args) for impl in ("ours", "theirs")}
    ours, theirs = _runners(case, args.ts_batch)
    theirs_ok = "peak_mib" in mem["theirs"]
    fns = {"ours": ours, **({"theirs": theirs} if theirs_ok else {})}
    diff = float((ours() - theirs()).abs().max()) if theirs_ok else None
    t = measure_interleaved(fns, repeats=args.repeats)
    hmm = case["kind"] == "hmm"
    ts_name = f"torch-struct ({args.ts_batch} pairs)" if hmm else "torch-struct"
    metrics, note = {}, None
    if theirs_ok:
        metrics["logz_diff"] = float(f"{diff:.1e}")
        if hmm:
            scaled = t["theirs"]["wall_s"] * case["B"] / args.ts_batch
            note = (f"torch-struct ran on {args.ts_batch} of the {case['B']} pairs: "
                    f"{scaled * 1e3:.1f} ms scaled linearly to {case['B']}")
        else:
            metrics["speedup"] = float(f"{t['theirs']['wall_s'] / t['ours']['wall_s']:.3g}")
            if mem["ours"].get("peak_mib") and mem["theirs"]["peak_mib"]:
                metrics["memory_ratio"] = float(
                    f"{mem['ours']['peak_mib'] / mem['theirs']['peak_mib']:.2g}")
    else:
        note = f"torch-struct: {mem['theirs'].get('error', 'failed')}"
    desc_note = f"{torch.get_num_threads()} thread(s), float32, median of {args.repeats}"
    rows = [make_row("lattices", label, "ours", metrics=metrics, wall_s=t["ours"]["wall_s"],
                     cpu_s=t["ours"]["cpu_s"], peak_rss_mib=mem["ours"].get("peak_mib"),
                     headline=name in ("linear", "semi3"),
                     note="; ".join(filter(None, [desc_note, note])))]
    if theirs_ok:
        rows.append(make_row("lattices", label, ts_name, role="peer",
                             wall_s=t["theirs"]["wall_s"], cpu_s=t["theirs"]["cpu_s"],
                             peak_rss_mib=mem["theirs"]["peak_mib"], note=desc_note))
    return rows


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--cap-gib", type=float, default=4.0,
                    help="address-space cap of torch-struct's memory process")
    ap.add_argument("--ts-batch", type=int, default=2, help="hmm: torch-struct's pairs")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--child", choices=["ours", "theirs"], help=argparse.SUPPRESS)
    add_output_args(ap, "lattices")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.child:
        case = {**CASES[args.cases[0]], **(QUICK[args.cases[0]] if args.quick else {})}
        print(json.dumps(_child_memory(case, args.child, args.cap_gib, args.ts_batch)))
        return []
    rows = [r for name in args.cases for r in run_case(name, args)]
    for r in rows:
        print(f"{r['dataset']:<34} {r['system']:<22} wall {r['wall_s'] * 1e3:10.2f} ms  CPU "
              f"{r['cpu_s'] * 1e3:10.2f} ms  peak {r['peak_rss_mib']} MiB  {r['metrics']}  "
              f"{r['note'] or ''}")
    if not args.no_save and not args.quick:  # --quick sizes are not results
        print(f"wrote {write_rows('lattices', rows, args.results)}")
    return rows


if __name__ == "__main__":
    main()
