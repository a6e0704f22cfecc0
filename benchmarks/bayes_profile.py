"""Phase profile of `aligners align --model bayesian` (exact sampler): CPU seconds, wall
seconds and resident memory per phase of the real command, in one process.

    python benchmarks/bayes_profile.py SRC TGT [--threads 2] [--length 1.0] [--seed 0]

Runs the CLI's own code path (`aligners.cli.main(["align", "--model", "bayesian", ...])`,
writing -f/-r links to a temporary folder) with timers wrapped around its phases: reading +
vocabulary encoding, the pair-table build, the kernels' warm-up, the prior arrays, every
sweep call (per stage; accumulating sweeps separately; CPU seconds from the calling
thread's clock, so with 2 threads the sweep rows add up both threads' CPU), add_counts,
key rebuild, and writing (decoding + formatting). A sampler thread reads VmRSS every 20 ms
and records the peak per phase (the phase that was running when the peak was seen).
Prints one row per phase and the totals (process CPU from `os.times`, VmHWM).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

__all__ = ["main"]


def _rss_mib(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


class Profile:
    """Per-phase wall, CPU (thread clock of the calling thread) and call counts; a
    background thread tags RSS samples with the current phase of the main thread."""

    def __init__(self):
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.peak: dict[str, float] = {}
        self.phase = "startup"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            rss = _rss_mib()
            if rss > self.peak.get(self.phase, 0.0):
                self.peak[self.phase] = rss

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu
        self.calls[name] = self.calls.get(name, 0) + 1

    @contextlib.contextmanager
    def section(self, name: str, *, tag: bool = True):
        old = self.phase
        if tag:
            self.phase = name
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0, time.thread_time() - c0)
            if tag:
                self.phase = old

    def wrap(self, name, fn, *, tag: bool = True):
        def wrapper(*a, **k):
            with self.section(name(*a) if callable(name) else name, tag=tag):
                return fn(*a, **k)
        return wrapper


def main(argv: list[str]) -> None:
    import inspect

    import aligners.commands._align_bayes as cmd
    import aligners.commands.align as align_cmd
    import aligners.models.bayes.corpus as corpus_mod
    import aligners.models.bayes.model as model_mod
    from aligners.cli import main as cli_main
    from aligners.models.bayes import counts
    from aligners.models.bayes import sampler as kernels

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("tgt")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--length", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    prof = Profile()
    names = list(inspect.signature(kernels.sweep.py_func).parameters)
    i_acc, i_stage = names.index("accumulate"), names.index("stage")
    sweep = kernels.sweep

    def sweep_name(*a):
        return f"sweep stage {a[i_stage]}{' (accumulating)' if a[i_acc] else ''}"

    # tag=False for calls made from the sampling threads (the main thread's phase stays)
    model_mod._k.sweep = prof.wrap(sweep_name, sweep, tag=False)
    model_mod._c.add_counts = prof.wrap("add_counts", counts.add_counts, tag=False)
    model_mod._c.warmup = prof.wrap("numba warm-up (cache load)", counts.warmup)
    corpus_mod._build_pairs = prof.wrap("pair table (hash pass)", corpus_mod._build_pairs)
    corpus_mod.release_free_heap = prof.wrap("malloc_trim", corpus_mod.release_free_heap)
    encode = model_mod.encode_bitext
    model_mod.encode_bitext = prof.wrap("read + encode (total)", encode)
    cls = model_mod.BayesAligner
    cls._priors = prof.wrap("prior arrays", cls._priors)
    direction = cls._direction

    def direction_timed(self, corpus, d, *a):
        return prof.wrap(f"direction {d} (thread total)", direction, tag=False)(
            self, corpus, d, *a)

    cls._direction = direction_timed
    cls.align = prof.wrap("align (total)", cls.align)
    model_mod.EncodedBitext.restore_keys = prof.wrap("restore keys",
                                                     model_mod.EncodedBitext.restore_keys)
    cmd_run = cmd.run_bayes

    def run_bayes(a, pairs, w):
        return cmd_run(a, pairs, prof.wrap(lambda dest, _: f"decode + write {Path(dest).name}",
                                           w))

    align_cmd.run_bayes = run_bayes  # (align.run imports it lazily: patch the module too)
    cmd.run_bayes = run_bayes
    prof.start()
    out = Path(tempfile.mkdtemp(prefix="bayes-prof-"))
    t0, c0 = time.perf_counter(), os.times()
    status = cli_main(["align", "--quiet", "--model", "bayesian", "--seed", str(args.seed),
                       "--length", str(args.length), "--sampler-threads", str(args.threads),
                       "-s", args.src, "-t", args.tgt, "-f", str(out / "fwd"),
                       "-r", str(out / "rev")])
    wall = time.perf_counter() - t0
    c1 = os.times()
    prof.stop()
    cpu = c1.user - c0.user + c1.system - c0.system
    print(f"status {status}; whole command: wall {wall:.1f} s, CPU {cpu:.1f} s "
          f"(user {c1.user - c0.user:.1f}, sys {c1.system - c0.system:.1f}), "
          f"VmHWM {_rss_mib('VmHWM'):.0f} MiB")
    print(f"{'phase':<40} {'wall s':>8} {'CPU s':>8} {'calls':>6} {'peak RSS MiB':>13}")
    for name in prof.wall:
        pk = prof.peak.get(name)
        print(f"{name:<40} {prof.wall[name]:8.2f} {prof.cpu[name]:8.2f} {prof.calls[name]:6d} "
              f"{'' if pk is None else f'{pk:13.0f}'}")
    for name, pk in prof.peak.items():
        if name not in prof.wall:
            print(f"{name:<40} {'':>8} {'':>8} {'':>6} {pk:13.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
