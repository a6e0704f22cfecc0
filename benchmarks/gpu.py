"""One-command GPU benchmark: the chain lattices side by side with torch-struct, the
factored HMM, the 200k word aligner (GPU vs the same box's CPU, test AER), the monolingual
phrase CRF (train + decode, test F1) and the gappy phrasal HSMM (CLI, test AER); rows ->
benchmarks/results/gpu.json.

    python benchmarks/gpu.py --device cuda [--json gpu.json] [--repeats 10] [--methods]
    python benchmarks/gpu.py --device cpu --quick        # smoke test (tiny sizes, nothing saved)
    bash benchmarks/gpu_session.sh OUT                   # cuda tests + cases, per-stage limits

Runs from a fresh checkout (``pip install -e .`` or just the dependencies; torch with CUDA
already installed). Every case is a function in ``CASES`` taking a ``Bench`` and returning
table rows (``OPTIONAL_CASES`` run only when named in ``--cases``). Lattice times are
medians over ``--repeats`` runs of forward + backward (log Z and its gradient = marginals),
each bracketed by ``torch.cuda.synchronize()`` on CUDA, after one warm-up run
(``harness.measure``). Peak memory: ``harness.cuda_peak_mib`` (growth of
``torch.cuda.max_memory_allocated()``) on CUDA, ``harness.peak_growth_mib`` (resident set) on CPU.
Launches: device kernels (and memcpy/memset) of one run under ``torch.profiler`` on CUDA; on
CPU the number of computing aten ops (a proxy: what would be launched on a GPU).
torch-struct's out-of-memory is caught and printed as "OOM"; on CPU it is not started when
its O(B·N·C³) (semi-Markov: O(B·N·(K·C)³)) estimate exceeds ``--cap-gib`` ("OOM (est.)").
Prints one markdown table and, with ``--json PATH``, writes the rows as JSON; unless
``--quick`` or ``--no-save``, merges them as result rows into ``--results``/gpu.json (tasks
``gpu-lattices`` and ``gpu-models``). Under 5 minutes on one H100/H200 at the default sizes.

To add a case: write ``case_x(bench: Bench) -> None`` that calls ``bench.row(case, impl,
result, note)`` (impl ending in " on <device>") and append it to ``CASES``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
warnings.filterwarnings("ignore", message=".*arg_constraints.*")

from harness import (  # noqa: E402
    add_output_args,
    cuda_peak_mib,
    machine,
    make_row,
    measure,
    peak_growth_mib,
    write_rows,
)

__all__ = ["CASES", "LATTICE_CASES", "OPTIONAL_CASES", "Bench", "main", "result_rows"]


@dataclass
class Bench:
    """What a case needs: device, sizes switch, repeats, torch-struct switch and memory cap."""

    device: torch.device
    quick: bool = False
    repeats: int = 10
    torch_struct: bool = True
    cap_gib: float = 8.0
    methods: bool = False
    word_cells: list = field(default_factory=list)  # empty: the case's default budgets
    cpu_baseline: bool = True
    rows: list = field(default_factory=list)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def measure(self, run) -> dict:
        """Median ms of ``run()`` over the repeats (after one warm-up) and peak MiB of one run."""
        t = measure(run, repeats=self.repeats, sync=self.sync)
        return {"ms": t["wall_s"] * 1e3, "peak_mib": self.peak_mib(run),
                "kernels": self.count_kernels(run)}

    def count_kernels(self, run) -> int:
        """Launches in one run: device kernels + memcpy/memset on CUDA; on CPU (a proxy)
        the leaf aten ops that compute (views and allocations excluded)."""
        from torch.profiler import ProfilerActivity, profile

        cuda = self.device.type == "cuda"
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=acts) as prof:
            run()
            self.sync()
        events = prof.events()
        if cuda:
            return sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
        return sum(1 for e in events if e.name.startswith("aten::") and e.name not in _NO_KERNEL
                   and not any(c.name.startswith("aten::") for c in e.cpu_children))

    def peak_mib(self, run) -> float | None:
        if self.device.type == "cuda":
            return cuda_peak_mib(run, self.device)
        return peak_growth_mib(run)

    def row(self, case: str, impl: str, result: dict | None = None, note: str = "") -> dict:
        row = {"case": case, "impl": impl, "ms": None, "peak_mib": None, "kernels": None,
               "note": note}
        row.update(result or {})
        self.rows.append(row)
        print(f"row: {case} | {impl} | ms {row['ms']} | peak MiB {row['peak_mib']} | "
              f"{note}", file=sys.stderr, flush=True)  # kept if a later case is cut off
        return row

    def oom(self, err: BaseException | None = None) -> str:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        return "OOM" if err is None else f"OOM ({type(err).__name__})"


_NO_KERNEL = frozenset(f"aten::{n}" for n in (
    "view", "reshape", "_reshape_alias", "as_strided", "unsqueeze", "squeeze", "expand",
    "expand_as", "transpose", "permute", "t", "slice", "select", "narrow", "unbind", "split",
    "chunk", "flatten", "diagonal", "detach", "detach_", "alias", "_unsafe_view", "view_as",
    "movedim", "lift_fresh", "empty", "empty_like", "empty_strided", "resize_",
    "resolve_conj", "resolve_neg", "result_type", "is_nonzero", "item", "real",
    "_local_scalar_dense", "scalar_tensor"))


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def _private_chain_helpers():
    """The chain lattices' method choice and CUDA-graph cache. Private modules: no public API
    names the method "auto" picks or empties / inspects the graph cache yet (see the report
    of the benchmark-suite work); this is the only place the benchmarks reach into them."""
    from aligners.lattices import _chain_graph, _chain_scan

    return _chain_scan.use_scan, _chain_graph


def _fwd_bwd(fn, lp):
    def run():
        x = lp.detach().requires_grad_(True)
        z = fn(x)
        z.sum().backward()
        return z.detach()

    return run


def _graph_capture(bench: Bench, run) -> str:
    """Method "graph" on CUDA: a shape's second call captures its CUDA graphs. The
    allocation peak of the capturing call and the memory the graph's private pool keeps
    reserved afterwards (the replays' "peak MiB" excludes that pool), as a note."""
    if bench.device.type != "cuda":
        return ""
    _, _chain_graph = _private_chain_helpers()
    _chain_graph.clear()
    run()  # first call of the shape: eager
    gc.collect()
    torch.cuda.empty_cache()
    reserved = torch.cuda.memory_reserved(bench.device)
    peak = bench.peak_mib(run)  # second call: capture, then replay
    if not _chain_graph._GRAPHS:
        return "no graph: above MAX_CELLS, the plain scan ran"
    gc.collect()
    torch.cuda.empty_cache()  # the warm-up's cached blocks go; the graph's pool stays
    kept = (torch.cuda.memory_reserved(bench.device) - reserved) / 2**20
    return f"capture peak {peak:.1f} MiB; graph pool keeps {kept:.1f} MiB reserved"


def _chain_case(bench: Bench, name: str, shape: tuple, ts_bytes: float) -> None:
    """Ours (auto method; and the loop when auto picks the scan; with --methods every other
    method: loop, scan, graph) vs torch-struct."""
    from aligners.lattices import linear_chain, semimarkov

    use_scan, _ = _private_chain_helpers()
    dev = bench.device.type
    linear = len(shape) == 4
    g = torch.Generator().manual_seed(0)
    lp = torch.randn(*shape, generator=g).to(bench.device)
    mod = linear_chain if linear else semimarkov
    spans = lp.unsqueeze(2) if linear else lp[:, :, 1:]
    auto = "scan" if use_scan("auto", spans) else "loop"
    ours = bench.measure(_fwd_bwd(mod.log_partition, lp))
    z = mod.log_partition(lp).detach()
    top = bench.row(name, f"ours (auto: {auto}) on {dev}", ours)
    others = [m for m in ("loop", "scan", "graph") if m != auto and (
        bench.methods or (auto == "scan" and m == "loop"))]
    for other in others:  # the other methods, for the per-size choice
        run = _fwd_bwd(lambda x, m=other: mod.log_partition(x, method=m), lp)
        note = _graph_capture(bench, run) if other == "graph" else ""
        bench.row(name, f"ours ({other}) on {dev}", bench.measure(run), note)
    if not bench.torch_struct:
        return
    try:
        import torch_struct
    except ImportError:
        bench.row(name, f"torch-struct on {dev}", note="not installed")
        return
    cls = torch_struct.LinearChainCRF if linear else torch_struct.SemiMarkovCRF
    if bench.device.type == "cpu" and ts_bytes > bench.cap_gib * 2**30:
        bench.row(name, f"torch-struct on {dev}",
                  note=f"OOM (est. {ts_bytes / 2**30:.0f} GiB > cap)")
        return
    try:
        theirs = bench.measure(_fwd_bwd(lambda x: cls(x).partition, lp))
        zt = cls(lp).partition.detach()
    except (torch.cuda.OutOfMemoryError, MemoryError, RuntimeError) as err:
        if "out of memory" not in str(err).lower() and not isinstance(err, MemoryError):
            raise
        bench.row(name, f"torch-struct on {dev}", note=bench.oom(err))
        return
    top["logz_diff"] = float((z.cpu() - zt.cpu()).abs().max())
    top["note"] = f"max |log Z diff| {top['logz_diff']:.1e}"
    top["speedup"] = theirs["ms"] / ours["ms"]
    if ours["peak_mib"] and theirs["peak_mib"]:
        top["memory_ratio"] = ours["peak_mib"] / theirs["peak_mib"]
    mem = f"{top['memory_ratio']:.3f}" if "memory_ratio" in top else "-"
    bench.row(name, f"torch-struct on {dev}", theirs,
              note=f"ours {top['speedup']:.1f}x faster, memory ratio {mem}")


def case_linear_small(bench: Bench) -> None:
    """Linear chain B32 N40 C40, log Z forward + backward."""
    B, N, C = (2, 5, 3) if bench.quick else (32, 40, 40)
    _chain_case(bench, f"linear chain B{B} N{N} C{C}", (B, N - 1, C, C), 3 * 4.0 * B * N * C**3)


def case_semi_small(bench: Bench) -> None:
    """Semi-Markov B16 N30 K3 C30."""
    B, N, K, C = (2, 5, 3, 3) if bench.quick else (16, 30, 3, 30)
    _chain_case(bench, f"semi-Markov B{B} N{N} K{K} C{C}", (B, N - 1, K, C, C),
                3 * 4.0 * B * N * (K * C) ** 3)


def case_linear_large(bench: Bench) -> None:
    """Linear chain B256 N100 C64 (torch-struct runs out of memory on an H100)."""
    B, N, C = (3, 7, 4) if bench.quick else (256, 100, 64)
    _chain_case(bench, f"linear chain B{B} N{N} C{C}", (B, N - 1, C, C), 3 * 4.0 * B * N * C**3)


def case_semi_large(bench: Bench) -> None:
    """Semi-Markov B64 N60 K8 C30 (torch-struct runs out of memory on an H100)."""
    B, N, K, C = (3, 7, 4, 3) if bench.quick else (64, 60, 8, 30)
    _chain_case(bench, f"semi-Markov B{B} N{N} K{K} C{C}", (B, N - 1, K, C, C),
                3 * 4.0 * B * N * (K * C) ** 3)


def case_factored_hmm(bench: Bench) -> None:
    """Factored alignment-HMM posteriors B512 N40 C80 (hmm_posteriors, no autograd)."""
    from lattices import alignment_hmm_inputs

    from aligners.lattices import hmm_posteriors

    B, I = (4, 3) if bench.quick else (512, 40)
    init, trans, emit = (x.to(bench.device) for x in
                         alignment_hmm_inputs(batch=B, src_len=I, tgt_len=I))
    res = bench.measure(lambda: hmm_posteriors(init, trans, emit))
    bench.row(f"factored HMM posteriors B{B} N{I} C{2 * I}", f"ours on {bench.device.type}", res)


def _timed(bench: Bench, run) -> float:
    """Seconds of one run of ``run()`` (synchronised on CUDA)."""
    bench.sync()
    t = time.perf_counter()
    run()
    bench.sync()
    return time.perf_counter() - t


def _hansards(n: int):
    """(the first n Hansards training pairs + the 447 test pairs as (src, tgt) token lists,
    the test pairs with their gold alignments): unsupervised aligners train on what they
    align."""
    import itertools

    from aligners.data.datasets import iter_parallel, load

    test = load("hansards-enfr", "test")
    split = "train" if n is not None and n <= 200_000 else "train_full"  # None: all 1.13M
    pairs = list(itertools.islice(iter_parallel("hansards-enfr", split), n))
    return pairs + [(p.src, p.tgt) for p in test], test


def _test_aer(test, links) -> float:
    """Micro AER of links (one list of (i, j) per test pair) against the test gold."""
    from aligners.metrics import evaluate_alignments

    return evaluate_alignments([p.alignment for p in test], links, breakdowns=False).micro.aer


def _word_em(bench: Bench, index, ids, device: torch.device, config, test) -> dict:
    """EM (the whole schedule) of the word aligner on `device`, then the default decoding
    (agreement, threshold 0.3) of the `test` pairs: seconds of EM, peak MiB, loglik, AER.
    `ids`: the (source, target) WordIds the index was built with."""
    from aligners.data.bitext import build_index
    from aligners.models.aligned import parse_line
    from aligners.models.hmm.agreement import WordAligner, WordDecoding
    from aligners.models.hmm.decode import decode_lines

    model = WordAligner.from_index(index, config).to(device)
    model.reset_counts()
    index.to(device)  # once: no copies per EM iteration
    saved, bench.device = bench.device, device
    try:
        gc.collect()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        hist = []
        sec = _timed(bench, lambda: hist.extend(model.fit(index)))
        peak = (torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda"
                else _status("VmHWM") / 2**20)
    finally:
        bench.device = saved
    index.to("cpu")
    dec = WordDecoding()
    test_index = build_index([(p.src, p.tgt) for p in test], *ids,
                             keys=model.keys)
    test_index.to(device)
    lines = decode_lines(model, test_index, method=dec.method, threshold=dec.threshold,
                         heuristic=dec.symmetrize, outputs=("sym",))["sym"]
    links = [parse_line(x)[0] for x in lines]
    return {"ms": sec * 1e3, "peak_mib": peak, "loglik_fwd": hist[-1][0],
            "aer": _test_aer(test, links)}


def case_word_aligner(bench: Bench) -> None:
    """Word aligner (IBM1 x5 -> HMM x5, agreement) EM on the first 200k Hansards training
    pairs + the 447 test pairs (trained on the text it aligns), once per batch budget in
    ``bench.word_cells`` (padded cells per batch; default: the CPU's 1M, and on CUDA also the
    GPU default 16M), then the test AER of the default decoding (agreement > 0.3); at 1M
    cells also the same box's CPU (all its threads) unless ``--no-cpu-baseline``. --quick:
    500 pairs, 1 + 1 iterations. Peak MiB: device memory on CUDA, the process's RSS
    high-water mark on CPU. One run each; ms = EM only (no indexing, no decoding)."""
    from aligners.data import DEFAULT_CELLS, GPU_CELLS
    from aligners.data.bitext import build_index
    from aligners.data.vocab import WordIds
    from aligners.models.hmm.agreement import WordAlignConfig

    n = 500 if bench.quick else 200_000
    config = WordAlignConfig(ibm1_iterations=1, hmm_iterations=1) if bench.quick else (
        WordAlignConfig())
    pairs, test = _hansards(n)
    budgets = bench.word_cells or ([DEFAULT_CELLS] + (
        [GPU_CELLS] if bench.device.type == "cuda" else []))
    for cells in budgets:
        ids = (WordIds(), WordIds())
        index = build_index(pairs, *ids, cells=cells)
        name = (f"word aligner EM, {index.n_sentences} Hansards pairs, {cells / 1e6:g}M "
                f"cells/batch ({len(index)} batches)")
        devices = [bench.device]
        if bench.device.type != "cpu" and cells == DEFAULT_CELLS and bench.cpu_baseline:
            devices.append(torch.device("cpu"))
        base = None
        for device in devices:
            res = _word_em(bench, index, ids, device, config, test)
            note = f"loglik fwd {res['loglik_fwd']:.6g}; test AER {res['aer']:.4f}"
            if base is not None:
                note += f"; {res['ms'] / base:.2f}x the {bench.device.type} time"
            base = base or res["ms"]
            bench.row(name, f"ours on {device.type}", res, note)
        del index


def case_mono_phrase_crf(bench: Bench) -> None:
    """Monolingual phrase CRF (Yao et al. 2013) on MSR06: `train.py
    experiment=yao2013_msr06_phrase trainer=gpu|cpu` (train + decode + score, one run);
    --quick: 20 training pairs, 10 test pairs, 3 L-BFGS iterations. ms = the whole task."""
    import tempfile

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict

    from aligners.run import train

    trainer = "gpu" if bench.device.type == "cuda" else "cpu"
    over = ["experiment=yao2013_msr06_phrase", f"trainer={trainer}"]
    if bench.quick:
        over += ["data.train_limit=20", "data.test_limit=10", "training.max_iter=3"]
    with tempfile.TemporaryDirectory(prefix="gpu-bench-mono-") as out:  # removed afterwards
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
            cfg = compose(config_name="train", overrides=over, return_hydra_config=True)
        with open_dict(cfg):
            cfg.hydra.runtime.output_dir = out
            cfg.hydra.job.num = 0
        HydraConfig.instance().set_config(cfg)
        plain = OmegaConf.to_container(cfg, resolve=True)
        plain.pop("hydra", None)
        metrics = {}
        sec = _timed(bench, lambda: metrics.update(train(OmegaConf.create(plain))))
    test = next((v for k, v in metrics.items() if k.startswith("test")), {})
    f1 = test.get("micro/f1")
    note = f"trainer={trainer}; test micro F1 {f1:.4f}" if f1 is not None else (
        f"trainer={trainer}")
    bench.row("mono phrase CRF MSR06 train+decode", f"ours on {bench.device.type}",
              {"ms": sec * 1e3, "test_f1": f1}, note)


def _cli_align(bench: Bench, label: str, flags: list[str], quick: list[str],
               pairs: int | None = 20_000, device: str | None = None, repeat: int = 1) -> None:
    """`aligners align FLAGS --device D` on the first `pairs` Hansards training pairs (None:
    the full 1.13M; `repeat` times over) + the 447 test pairs (--quick: 500 + test, and the
    `quick` flags added),
    as a subprocess: wall seconds of the whole command (reading, indexing, training,
    decoding, writing; its summary line says how they split) and the test AER of its
    default output. `device` overrides the bench's (e.g. "cpu": a CPU-only model)."""
    import subprocess
    import tempfile

    flags = flags + (quick if bench.quick else [])
    device = device or bench.device.type
    n = 500 if bench.quick else pairs
    rows, test = _hansards(n)
    rows = rows[:len(rows) - len(test)] * repeat + rows[len(rows) - len(test):]
    with tempfile.TemporaryDirectory(prefix="gpu-bench-align-") as work:
        src, tgt, out = (Path(work) / x for x in ("c.src", "c.tgt", "links"))
        for path, side in ((src, 0), (tgt, 1)):
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(" ".join(p[side]) + "\n" for p in rows)
        cmd = [sys.executable, "-m", "aligners", "align", "-s", str(src),
               "-t", str(tgt), "-o", str(out), "--device", device, *flags]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ROOT)] + [x for x in [os.environ.get("PYTHONPATH")] if x]))
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        sec = time.perf_counter() - start
        if proc.returncode != 0:
            bench.row(f"{label}, {len(rows)} Hansards pairs", f"ours on {device}",
                      None, "failed: " + proc.stderr.strip().splitlines()[-1][:200])
            return
        lines = out.read_text(encoding="utf-8").splitlines()
    from aligners.data.pharaoh import parse_pharaoh_line

    aer = _test_aer(test, [sorted(parse_pharaoh_line(line).sure)
                           for line in lines[len(rows) - len(test):]])
    phases = next((x.split("; ", 1)[1] for x in proc.stderr.splitlines()
                   if x.startswith("aligners align: ") and "; " in x), "")
    bench.row(f"{label}, {len(rows)} Hansards pairs", f"ours on {device}",
              {"ms": sec * 1e3, "aer": aer},
              f"`aligners align {' '.join(flags)}` whole command; test AER {aer:.4f}; "
              f"{phases}")


def case_phrasal_hsmm(bench: Bench) -> None:
    """Gappy phrasal HSMM by agreement (Bansal et al. 2011), the CLI's default schedule."""
    _cli_align(bench, "gappy phrasal HSMM align", ["--model", "gappy-hsmm"],
               ["--ibm1-iterations", "1", "--hmm-iterations", "1", "--phrasal-iterations", "1"])


def case_align_200k(bench: Bench) -> None:
    """The whole `aligners align --model hmm` command on 200k Hansards pairs (issue 26:
    target <= 15 s on one H100/H200)."""
    _cli_align(bench, "HMM align (200k case), whole command", ["--model", "hmm"],
               ["--ibm1-iterations", "1", "--hmm-iterations", "1"], pairs=200_000)


def case_align_full(bench: Bench) -> None:
    """The same on the full 1.13M-pair WPT training set (target <= 60 s)."""
    _cli_align(bench, "HMM align (full-set case), whole command", ["--model", "hmm"],
               ["--ibm1-iterations", "1", "--hmm-iterations", "1"], pairs=None)


def case_align_4x(bench: Bench) -> None:
    """The same on the full set repeated 4 times (4.5M pairs; issue 34: <= 90 s and <= 8 GB
    of host memory on one H100/H200)."""
    _cli_align(bench, "HMM align (full set x 4), whole command", ["--model", "hmm"],
               ["--ibm1-iterations", "1", "--hmm-iterations", "1"], pairs=None, repeat=4)


def case_bayes_cpu(bench: Bench) -> None:
    """Bayesian aligner (the exact sampler, CPU only) on 20k pairs: the device machine's CPU
    cores, beside its GPU cases."""
    _cli_align(bench, "Bayesian align (exact sampler, CPU)", ["--model", "bayesian", "--seed",
               "0"], ["--samplers", "1", "--length", "0.05"], device="cpu")


# HOOKS: append a function ``case_x(bench: Bench) -> None`` that calls ``bench.row(...)``
# to this list (a lattice case also to LATTICE_CASES: its rows go to the lattice table).
LATTICE_CASES = [case_linear_small, case_semi_small, case_linear_large, case_semi_large,
                 case_factored_hmm]
CASES = LATTICE_CASES + [case_word_aligner, case_mono_phrase_crf, case_phrasal_hsmm,
                         case_align_200k, case_align_full]
# not in the default run (4.5M pairs; CPU only): --cases case_align_4x case_bayes_cpu
OPTIONAL_CASES = [case_align_4x, case_bayes_cpu]


def _table(rows: list) -> str:
    out = ["| case | implementation | ms (median) | peak MiB | launches | note |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        ms = "-" if r["ms"] is None else f"{r['ms']:.2f}"
        mib = "-" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"
        kern = "-" if r["kernels"] is None else str(r["kernels"])
        out.append(f"| {r['case']} | {r['impl']} | {ms} | {mib} | {kern} | {r['note']} |")
    return "\n".join(out)


def result_rows(rows: list, lattice_cases: set) -> list[dict]:
    """The printed rows as result rows (harness.make_row): task gpu-lattices for the cases
    named in `lattice_cases`, else gpu-models; system = the implementation (with its
    device); memory = GPU MiB on cuda, resident-set MiB on cpu."""
    out = []
    for r in rows:
        metrics = {k: float(f"{r[k]:.3g}") for k in ("speedup", "memory_ratio") if k in r}
        if r.get("logz_diff") is not None:
            metrics["logz_diff"] = float(f"{r['logz_diff']:.1e}")
        if r.get("aer") is not None:
            metrics["aer"] = round(r["aer"], 4)
        if r.get("test_f1") is not None:
            metrics["micro_f1"] = round(100 * r["test_f1"], 2)
        cuda = r["impl"].endswith(" on cuda")
        out.append(make_row(
            "gpu-lattices" if r["case"] in lattice_cases else "gpu-models", r["case"],
            r["impl"], metrics=metrics, role="peer" if r["impl"].startswith("torch-struct")
            else "ours", wall_s=None if r["ms"] is None else r["ms"] / 1e3,
            peak_rss_mib=None if cuda else r["peak_mib"],
            cuda_peak_mib=r["peak_mib"] if cuda else None,
            headline=cuda and r["impl"].startswith("ours (auto") and "B32 N40" in r["case"]
            or r["impl"] == "ours on cuda" and "16M cells" in r["case"],
            note=r["note"] or None))
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here")
    parser.add_argument("--repeats", type=int, default=None, help="default: 10 (3 if --quick)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (torch)")
    parser.add_argument("--cap-gib", type=float, default=8.0,
                        help="CPU: do not start torch-struct above this memory estimate")
    parser.add_argument("--no-torch-struct", action="store_true")
    parser.add_argument("--methods", action="store_true",
                        help="also time the chain lattices with every other method (loop, "
                             "scan, graph)")
    parser.add_argument("--cases", nargs="*", help="names of case functions (default: all)")
    parser.add_argument("--word-cells", type=float, nargs="*", default=[],
                        help="word aligner: padded cells per batch to try (default: 1e6, "
                             "and on CUDA also 1.6e7)")
    parser.add_argument("--no-cpu-baseline", action="store_true",
                        help="word aligner on CUDA: skip the same box's CPU run")
    add_output_args(parser, "gpu")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device (use --device cpu)")
    if args.threads:
        torch.set_num_threads(args.threads)
    bench = Bench(torch.device(args.device), quick=args.quick,
                  repeats=args.repeats or (3 if args.quick else 10),
                  torch_struct=not args.no_torch_struct, cap_gib=args.cap_gib,
                  methods=args.methods, word_cells=[int(c) for c in args.word_cells],
                  cpu_baseline=not args.no_cpu_baseline)
    cases = [c for c in CASES + OPTIONAL_CASES if c.__name__ in args.cases] if args.cases else (
        CASES)
    desc = machine() + f", {torch.get_num_threads()} threads"
    start = time.perf_counter()
    lattice_cases = set()
    for case in cases:
        first = len(bench.rows)
        case(bench)
        if case in LATTICE_CASES:
            lattice_cases |= {r["case"] for r in bench.rows[first:]}
    header = (f"device: {args.device} ({desc}); float32; "
              f"median of {bench.repeats} forward+backward runs; "
              f"total {time.perf_counter() - start:.0f} s")
    print(header)
    print()
    print(_table(bench.rows))
    report = {"device": args.device, "machine": desc, "torch": torch.__version__,
              "repeats": bench.repeats, "quick": args.quick, "rows": bench.rows}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if not args.quick and not args.no_save:  # --quick sizes are not results
        print(f"wrote {write_rows('gpu', result_rows(bench.rows, lattice_cases), args.results)}")
    return report


if __name__ == "__main__":
    main()
