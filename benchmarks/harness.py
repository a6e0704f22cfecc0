"""The shared benchmark harness: timing, memory, side-by-side peer runs, result rows.

Every script in ``benchmarks/`` measures with these functions and writes its figures as rows
of ``benchmarks/results/<name>.json``; ``python benchmarks/report.py`` turns those files into
``RESULTS.md`` (and the marked blocks of ``README.md``).

- ``measure(fn)``: one warm-up call, then the median wall and process-CPU seconds of
  ``repeats`` calls (``sync`` runs around each call, e.g. ``torch.cuda.synchronize``);
  ``measure_interleaved({name: fn})`` the same for ours and a peer in turn, call by call.
- ``peak_growth_mib(fn)``: growth of this process's resident high-water mark over one call
  (``/proc/self/clear_refs``; None where that is not available); ``cuda_peak_mib(fn, device)``:
  growth of ``torch.cuda.max_memory_allocated`` over one call.
- ``run_command(cmd)``: a child process of this one, its wall seconds, CPU seconds (user +
  system of the child and the descendants it waited for, from ``os.wait4``) and peak RSS (the
  largest ``ru_maxrss`` in that tree; with ``psutil`` installed, also the sampled sum over the
  live tree, whichever is larger). ``run_side_by_side`` alternates several such commands
  (ours and the peer) in the same process tree, repeat by repeat.
- ``make_row`` / ``write_rows``: one result row with the fixed keys ``FIELDS`` (checked by
  ``check_row``), and the merge into the results file: a row replaces the stored row with
  the same (task, dataset, system); every other stored row stays.

Numbers are stored as they are to be shown: scripts round when they build a row
(``rounded``), the report prints the stored value unchanged.
"""

from __future__ import annotations

import datetime as _dt
import gc
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"

__all__ = ["FIELDS", "OPTIONAL", "RESULTS_DIR", "ROLES", "ResultsError", "add_output_args",
           "check_row", "command_line", "cuda_peak_mib", "git_commit", "load_rows", "machine",
           "make_row", "measure", "measure_interleaved", "measured_now", "peak_growth_mib",
           "rounded", "run_command", "run_side_by_side", "save_rows", "write_rows"]

# Every row has exactly these keys (None where not measured). Types: see check_row.
FIELDS = ("task", "dataset", "system", "role", "metrics", "wall_s", "cpu_s", "peak_rss_mib",
          "cuda_peak_mib", "peer", "headline", "machine", "command", "measured", "source",
          "note")
# Optional: command_s, the seconds the row's whole command ran when benchmarks/rerun.py last
# ran it (a lower bound where it was stopped at the limit).
OPTIONAL = ("command_s",)
ROLES = ("ours", "peer", "paper")
_TEXT = ("task", "dataset", "system", "machine", "command", "measured", "source")
_SECONDS_OR_MIB = ("wall_s", "cpu_s", "peak_rss_mib", "cuda_peak_mib")


class ResultsError(ValueError):
    """A malformed results file or row: the message names the file and the row."""


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_row(row, where: str = "row") -> dict:
    """Raise ResultsError naming `where` unless `row` is a dict with exactly FIELDS (and any
    of OPTIONAL): the text fields non-empty strings, role in ROLES, metrics a dict of name ->
    finite number, the times / memories (and command_s) None or a number >= 0, peer and note
    None or a string, headline a bool. Returns the row."""
    if not isinstance(row, dict):
        raise ResultsError(f"{where}: a row must be a JSON object, got {type(row).__name__}")
    missing = [k for k in FIELDS if k not in row]
    unknown = sorted(k for k in row if k not in FIELDS + OPTIONAL)
    if missing or unknown:
        raise ResultsError(f"{where}: " + "; ".join(
            ([f"missing key(s) {', '.join(missing)}"] if missing else [])
            + ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])))
    for k in _TEXT:
        if not isinstance(row[k], str) or not row[k].strip():
            raise ResultsError(f"{where}: {k!r} must be a non-empty string, got {row[k]!r}")
    if row["role"] not in ROLES:
        raise ResultsError(f"{where}: role must be one of {', '.join(ROLES)}, got "
                           f"{row['role']!r}")
    m = row["metrics"]
    if not isinstance(m, dict) or not all(isinstance(k, str) and _number(v) for k, v in
                                          m.items()):
        raise ResultsError(f"{where}: metrics must map names to finite numbers, got {m!r}")
    for k in _SECONDS_OR_MIB + tuple(k for k in OPTIONAL if k in row):
        if row[k] is not None and not (_number(row[k]) and row[k] >= 0):
            raise ResultsError(f"{where}: {k} must be null or a number >= 0, got {row[k]!r}")
    for k in ("peer", "note"):
        if row[k] is not None and not isinstance(row[k], str):
            raise ResultsError(f"{where}: {k} must be null or a string, got {row[k]!r}")
    if not isinstance(row["headline"], bool):
        raise ResultsError(f"{where}: headline must be true or false, got {row['headline']!r}")
    return row


def load_rows(path: Path) -> list[dict]:
    """The checked rows of one results file (a JSON list of rows)."""
    path = Path(path)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultsError(f"{path}: cannot read a JSON list of rows: {err}") from err
    if not isinstance(rows, list):
        raise ResultsError(f"{path}: must hold a JSON list of rows, got {type(rows).__name__}")
    return [check_row(r, f"{path} row {i + 1}") for i, r in enumerate(rows)]


def rounded(x: float | None, digits: int = 4) -> float | None:
    """x rounded to `digits` significant digits (None stays None): how times and memories
    are stored."""
    if x is None or x == 0:
        return x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def git_commit() -> str:
    """The short commit of the checkout, with "+dirty" when it has uncommitted changes
    (outside benchmarks/results/, RESULTS.md and README.md: the rows and the page that
    earlier runs of the same session wrote are not code)."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":!benchmarks/results", ":!RESULTS.md", ":!README.md"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha or "unknown") + ("+dirty" if dirty.strip() else "")


def measured_now() -> str:
    """'<UTC date> at commit <sha>': the provenance of a row measured now."""
    return f"{_dt.datetime.now(_dt.UTC):%Y-%m-%d} at commit {git_commit()}"


def machine() -> str:
    """CPU model, cores, 1-minute load average; torch's version and the CUDA device when
    torch is already imported (this function never imports it)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    parts = [f"{model}, {os.cpu_count()} cores"]
    try:
        parts.append(f"load {os.getloadavg()[0]:.1f}")
    except OSError:
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        parts.append(f"torch {torch.__version__}")
        if torch.cuda.is_available():
            parts.append(torch.cuda.get_device_name())
    return ", ".join(parts)


def command_line() -> str:
    """This process's command as a user would type it from the repository root."""
    argv = list(sys.argv)
    try:
        argv[0] = str(Path(argv[0]).resolve().relative_to(ROOT))
    except ValueError:
        pass
    return "python " + shlex.join(argv)


def make_row(task: str, dataset: str, system: str, *, metrics: dict | None = None,
             role: str = "ours", wall_s=None, cpu_s=None, peak_rss_mib=None,
             cuda_peak_mib=None, peer: str | None = None, headline: bool = False,
             note: str | None = None, command: str | None = None,
             machine_desc: str | None = None) -> dict:
    """A checked row measured now: machine, command line, commit and date filled in;
    times and memories rounded to 4 significant digits."""
    row = {"task": task, "dataset": dataset, "system": system, "role": role,
           "metrics": dict(metrics or {}), "wall_s": rounded(wall_s), "cpu_s": rounded(cpu_s),
           "peak_rss_mib": rounded(peak_rss_mib), "cuda_peak_mib": rounded(cuda_peak_mib),
           "peer": peer, "headline": headline, "machine": machine_desc or machine(),
           "command": command or command_line(), "measured": measured_now(),
           "source": Path(sys.argv[0]).name, "note": note}
    return check_row(row, f"{task}/{dataset}/{system}")


def write_rows(name: str, rows: list[dict], results_dir: Path | None = None) -> Path:
    """Merge `rows` into results_dir/<name>.json (default benchmarks/results): each replaces
    the stored row with the same (task, dataset, system), in place; new ones are appended.
    Returns the path."""
    path = Path(results_dir or RESULTS_DIR) / f"{name}.json"
    stored = load_rows(path) if path.exists() else []
    key = lambda r: (r["task"], r["dataset"], r["system"])  # noqa: E731
    new = {key(check_row(r, f"new row {i + 1}")): r for i, r in enumerate(rows)}
    merged = [new.pop(key(r), r) for r in stored] + list(new.values())
    path.parent.mkdir(parents=True, exist_ok=True)
    save_rows(path, merged)
    return path


def save_rows(path: Path, rows: list[dict]) -> None:
    """Write `rows` as the results file `path` (the one layout: keys in FIELDS order, then
    OPTIONAL ones present, indent 1, UTF-8)."""
    text = json.dumps([{k: r[k] for k in FIELDS + OPTIONAL if k in r} for r in rows],
                      indent=1, ensure_ascii=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def add_output_args(parser, name: str) -> None:
    """--results DIR (where <name>.json is merged; default benchmarks/results) and
    --no-save (print only)."""
    parser.add_argument("--results", type=Path, default=RESULTS_DIR,
                        help=f"folder of the results files (writes {name}.json there; "
                             "default: benchmarks/results)")
    parser.add_argument("--no-save", action="store_true",
                        help="print the rows, do not write the results file")


def measure(fn, *, repeats: int = 5, warmup: int = 1, sync=None) -> dict:
    """{'wall_s', 'cpu_s'} medians over `repeats` calls of fn() after `warmup` calls, and
    'walls' (every wall time). CPU = this process's CPU time (all its threads)."""
    return measure_interleaved({"fn": fn}, repeats=repeats, warmup=warmup, sync=sync)["fn"]


def measure_interleaved(fns: dict, *, repeats: int = 5, warmup: int = 1, sync=None,
                        repeats_of: dict | None = None) -> dict:
    """measure() of several functions (ours and its peers) in one process, in turn: each
    repeat calls every function once, so a change of load hits all of them alike.
    `repeats_of`: fewer repeats for a slow one (name -> count). Returns name -> measure()."""
    sync = sync or (lambda: None)
    for fn in fns.values():
        for _ in range(warmup):
            fn()
            sync()
    walls = {n: [] for n in fns}
    cpus = {n: [] for n in fns}
    for r in range(repeats):
        for name, fn in fns.items():
            if r >= (repeats_of or {}).get(name, repeats):
                continue
            sync()
            w, c = time.perf_counter(), time.process_time()
            fn()
            sync()
            walls[name].append(time.perf_counter() - w)
            cpus[name].append(time.process_time() - c)
    return {n: {"wall_s": statistics.median(walls[n]), "cpu_s": statistics.median(cpus[n]),
                "walls": walls[n]} for n in fns}


def _status_bytes(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def peak_growth_mib(fn) -> float | None:
    """MiB by which one call of fn() raises this process's resident high-water mark (freed
    heap is returned to the OS first, so that it counts again); None off Linux."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
        Path("/proc/self/clear_refs").write_text("5")
        base = _status_bytes("VmRSS")
        fn()
        return (_status_bytes("VmHWM") - base) / 2**20
    except (OSError, KeyError, AttributeError):
        return None


def cuda_peak_mib(fn, device) -> float:
    """MiB by which one call of fn() raises torch.cuda.max_memory_allocated on `device`."""
    import torch

    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    torch.cuda.synchronize(device)
    return (torch.cuda.max_memory_allocated(device) - base) / 2**20


def _tree_rss_sampler(pid: int, stop: threading.Event, out: list) -> None:
    """With psutil: the largest sum of RSS over pid and its live descendants, sampled."""
    try:
        import psutil
    except ImportError:
        return
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    peak = 0
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs))
        except psutil.Error:
            pass
        stop.wait(0.05)
    out.append(peak)


def run_command(cmd: list[str], *, env: dict | None = None, cwd: Path | None = None,
                stdout=None) -> dict:
    """Run cmd as a child of this process: {'wall_s', 'cpu_s', 'peak_rss_mib', 'returncode',
    'stderr' (its last 4,000 characters)}. `stdout`: an open file (default: discarded)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd or ROOT, stderr=err,
                                stdout=stdout if stdout is not None else subprocess.DEVNULL)
        stop, sampled = threading.Event(), []
        sampler = threading.Thread(target=_tree_rss_sampler, args=(proc.pid, stop, sampled),
                                   daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        sampler.join()
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-4000:]
    rss = usage.ru_maxrss / 1024  # kB on Linux
    if sampled:
        rss = max(rss, sampled[0] / 2**20)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mib": rss,
            "returncode": proc.returncode, "stderr": tail}


def run_side_by_side(commands: dict[str, list[str]], *, repeats: int = 1,
                     env: dict | None = None, envs: dict | None = None) -> dict[str, list]:
    """Each command `repeats` times, alternating in the order given (then reversed on the
    next repeat), in this process tree: name -> list of run_command results. A failed
    command raises RuntimeError with its stderr tail. `envs`: per-name environments."""
    out = {name: [] for name in commands}
    names = list(commands)
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            res = run_command(commands[name], env=(envs or {}).get(name, env))
            if res["returncode"] != 0:
                raise RuntimeError(f"{name} failed ({res['returncode']}): "
                                   f"{shlex.join(commands[name])}\n{res['stderr']}")
            out[name].append(res)
    return out
