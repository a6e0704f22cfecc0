"""Benchmark: the factored alignment-HMM lattice, forward+backward on CPU.

Alignment HMM with B pairs, source length I, target length J, C = 2I states (words + Och-Ney
NULLs), transitions (B,C,C) from a jump-width distribution. Measured side by side:
  ours         `hmm_posteriors` (scaled forward-backward with batched matmuls)
  logspace     plain log-space forward + autograd backward (gradients = posteriors)
  torch_struct torch-struct 0.5 `LinearChainCRF` on the same potentials materialised as
               (B,J-1,C,C); partition + autograd backward (marginals). Its parallel scan
               needs O(B·J·C³) memory, so it runs on a sub-batch (`--ts-batch`) and its
               time/memory are also given scaled linearly to B (marked "extrapolated").
Times: median over interleaved repeats (wall and process CPU time). Peak memory: increase
of the peak RSS of a fresh subprocess over one forward+backward. Bandwidth: the machine's
copy bandwidth from a large tensor copy, against the kernel's compulsory traffic model
(every step streams the (B,C,C) transition matrix once; see `kernel_bytes`).

    python benchmarks/lattices_hmm.py --batch 64 --src-len 40 --tgt-len 40 --repeats 15
    python benchmarks/lattices_hmm.py --hsmm 4 --threads 1   # HSMM side table only
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore", message=".*arg_constraints.*")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.lattices.hmm import _logspace_log_likelihood, hmm_posteriors  # noqa: E402
from aligners.lattices.hsmm import _logspace_forward, hsmm_posteriors  # noqa: E402

__all__ = ["alignment_hmm_inputs", "kernel_bytes", "main"]


def alignment_hmm_inputs(*, batch, src_len, tgt_len, seed=0, dtype=torch.float32):
    """Och-Ney alignment-HMM potentials: init (B,C), trans (B,C,C), emit (B,J,C), C = 2I.

    Word states 0..I-1, NULL states I..2I-1 (NULL i remembers position i). Jumps from word
    (or NULL) i to word i' score by a random jump-width table; to NULL i with p0 = 0.2.
    """
    g = torch.Generator().manual_seed(seed)
    B, I, J = batch, src_len, tgt_len
    C = 2 * I
    jump = torch.randn(B, 2 * I - 1, generator=g, dtype=dtype) - 0.1 * torch.arange(
        -(I - 1), I, dtype=dtype
    ).abs()
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


def kernel_bytes(*, batch, tgt_len, states, itemsize):
    """Compulsory traffic model of `hmm_posteriors`: the (B,C,C) transition matrix is read
    once per forward step and once per backward step, plus exp'd once (read+write) and the
    counts written once; emissions/posteriors (B,J,C) read/written a few (here 4) times."""
    mat = batch * states * states * itemsize
    vec = batch * tgt_len * states * itemsize
    return 2 * (tgt_len - 1) * mat + 3 * mat + 4 * vec


def _edge_potentials(init, trans, emit):
    """torch-struct convention: edge[b, n, z_{n+1}, z_n] (B,J-1,C,C)."""
    edge = (trans[:, None] + emit[:, 1:, None, :]).transpose(-1, -2).contiguous()
    edge[:, 0] += (init + emit[:, 0])[:, None, :]
    return edge


def _run(method, inputs, ts_inputs):
    init, trans, emit = inputs
    if method == "ours":
        hmm_posteriors(init, trans, emit)
    elif method == "logspace":
        leaves = [x.clone().requires_grad_() for x in (init, trans, emit)]
        z = _logspace_log_likelihood(*leaves)
        torch.autograd.grad(z.sum(), leaves)
    elif method == "torch_struct":
        from torch_struct import LinearChainCRF

        edge = ts_inputs.clone().requires_grad_()
        z = LinearChainCRF(edge).partition
        torch.autograd.grad(z.sum(), edge)
    else:
        raise ValueError(method)


def _inputs(args):
    inputs = alignment_hmm_inputs(batch=args.batch, src_len=args.src_len, tgt_len=args.tgt_len)
    sub = [x[: args.ts_batch] for x in inputs]
    return inputs, _edge_potentials(*sub)


def _vm_hwm_kib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise OSError("no VmHWM")


def _worker(args):
    """Fresh process: peak-RSS increase (MiB) over one forward+backward of args.worker.

    The RSS high-water mark is reset first (/proc/self/clear_refs), so that the parent's
    peak, which Linux carries across fork+exec, does not mask the measurement."""
    torch.set_num_threads(args.threads)
    inputs, ts_inputs = _inputs(args)
    Path("/proc/self/clear_refs").write_text("5")
    before = _vm_hwm_kib()
    _run(args.worker, inputs, ts_inputs)
    after = _vm_hwm_kib()
    print(json.dumps({"peak_mib": (after - before) / 1024}))


def _peak_mib(args, method):
    cmd = [sys.executable, __file__, "--worker", method]
    for k in ("batch", "src_len", "tgt_len", "ts_batch", "threads"):
        cmd += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["peak_mib"]


def _copy_bandwidth(repeats):
    src = torch.ones(64 * 1024 * 1024)  # 256 MiB
    dst = torch.empty_like(src)
    dst.copy_(src)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src)
        ts.append(time.perf_counter() - t0)
    nbytes = 2 * src.numel() * src.element_size()
    return nbytes / min(ts), nbytes / statistics.median(ts)


def _hsmm_table(args):
    """HSMM side table: ours vs log-space autograd, K = args.hsmm, same B, J, C."""
    init, trans, emit = alignment_hmm_inputs(
        batch=args.batch, src_len=args.src_len, tgt_len=args.tgt_len
    )
    g = torch.Generator().manual_seed(1)
    seg = emit.unsqueeze(2) + torch.randn(*emit.shape[:2], args.hsmm, emit.shape[2], generator=g)
    lengths = torch.full((args.batch,), args.tgt_len)

    def logspace():
        leaves = [x.clone().requires_grad_() for x in (init, trans, seg)]
        z = _logspace_forward(*leaves, lengths)[0]
        torch.autograd.grad(z.sum(), leaves, allow_unused=True)

    runs = {"ours": lambda: hsmm_posteriors(init, trans, seg), "logspace": logspace}
    wall = {m: [] for m in runs}
    cpu = {m: [] for m in runs}
    for f in runs.values():
        f()
    for _ in range(args.repeats):
        for m, f in runs.items():
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            wall[m].append(time.perf_counter() - t0)
            cpu[m].append(time.process_time() - c0)
    print(f"# HSMM: B={args.batch} N={args.tgt_len} K={args.hsmm} C={2 * args.src_len} float32, "
          f"{args.threads} threads, {args.repeats} interleaved repeats")
    print("| method | median wall ms | median CPU ms | CPU ratio vs ours |")
    print("|---|---|---|---|")
    ours_c = statistics.median(cpu["ours"])
    for m in runs:
        w, c = statistics.median(wall[m]), statistics.median(cpu[m])
        print(f"| {m} | {w * 1e3:.2f} | {c * 1e3:.2f} | {c / ours_c:.1f}x |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--src-len", type=int, default=40)
    p.add_argument("--tgt-len", type=int, default=40)
    p.add_argument("--ts-batch", type=int, default=2)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--ts-repeats", type=int, default=5, help="repeats for torch-struct")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--worker", default=None)
    p.add_argument("--hsmm", type=int, default=0, help="K > 0: only the HSMM side table")
    args = p.parse_args(argv)
    if args.worker:
        return _worker(args)
    if args.hsmm:
        torch.set_num_threads(args.threads)
        return _hsmm_table(args)
    peak = {m: _peak_mib(args, m) for m in ("ours", "logspace", "torch_struct")}
    torch.set_num_threads(args.threads)
    inputs, ts_inputs = _inputs(args)
    # correctness guard: all three agree on the sub-batch's log-likelihood
    ours = hmm_posteriors(*(x[: args.ts_batch] for x in inputs)).log_likelihood
    from torch_struct import LinearChainCRF

    theirs = LinearChainCRF(ts_inputs).partition
    assert torch.allclose(ours, theirs, rtol=1e-4), (ours, theirs)
    methods = ["ours", "logspace", "torch_struct"]
    wall = {m: [] for m in methods}
    cpu = {m: [] for m in methods}
    for m in methods:
        _run(m, inputs, ts_inputs)  # warm-up
    for r in range(args.repeats):
        for m in methods:
            if m == "torch_struct" and r >= args.ts_repeats:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            _run(m, inputs, ts_inputs)
            wall[m].append(time.perf_counter() - t0)
            cpu[m].append(time.process_time() - c0)
    bw_best, bw_median = _copy_bandwidth(max(5, args.repeats // 2))
    C = 2 * args.src_len
    nbytes = kernel_bytes(batch=args.batch, tgt_len=args.tgt_len, states=C, itemsize=4)
    scale = {"ours": 1.0, "logspace": 1.0, "torch_struct": args.batch / args.ts_batch}
    rows = []
    for m in methods:
        w, c = statistics.median(wall[m]) * 1e3, statistics.median(cpu[m]) * 1e3
        rows.append((m, w, c, peak[m], scale[m]))
    print(f"# alignment HMM: B={args.batch} I={args.src_len} J={args.tgt_len} C={C} float32, "
          f"{args.threads} threads, {args.repeats} interleaved repeats "
          f"({args.ts_repeats} for torch-struct); torch {torch.__version__}")
    print("| method | batch run | median wall ms | median CPU ms | peak RSS MiB | "
          "wall ms at B (extrap.) | wall ratio vs ours |")
    print("|---|---|---|---|---|---|---|")
    ours_w = rows[0][1]
    for m, w, c, pk, s in rows:
        bs = args.ts_batch if m == "torch_struct" else args.batch
        ext = f"{w * s:.1f}" + (" (extrapolated)" if s != 1.0 else "")
        print(f"| {m} | {bs} | {w:.2f} | {c:.2f} | {pk:.1f} | {ext} | {w * s / ours_w:.1f}x |")
    achieved = nbytes / (ours_w / 1e3)
    achieved_cpu = nbytes / (rows[0][2] / 1e3)
    print(f"\ncopy bandwidth (256 MiB tensor copy, read+write): best {bw_best / 1e9:.2f} GB/s, "
          f"median {bw_median / 1e9:.2f} GB/s")
    print(f"ours: compulsory traffic model {nbytes / 1e6:.1f} MB per forward+backward -> "
          f"{achieved / 1e9:.2f} GB/s = {achieved / bw_median:.0%} of the median copy bandwidth "
          f"(the (B,C,C)={args.batch * C * C * 4 / 2**20:.1f} MiB transition matrix may sit in "
          "L2/L3, so this can exceed 100%)")
    print(f"ours by CPU time (excludes waiting for a core on a loaded machine): "
          f"{achieved_cpu / 1e9:.2f} GB/s = {achieved_cpu / bw_median:.0%} of the median copy "
          "bandwidth")
    return None


if __name__ == "__main__":
    main()
