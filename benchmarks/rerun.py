"""Re-run the benchmark commands behind the results rows, each within a time limit.

    python benchmarks/report.py --rerun --dry-run        # the plan: what runs, what not, why
    python benchmarks/report.py --rerun                  # every command that fits 30 minutes
    python benchmarks/report.py --rerun --stale --match lclr --limit-min 60

One job per distinct ``command`` of the rows of ours (a peer's row measured by the same
command is refreshed with it). A job is skipped, with the reason in the plan, when its command
is not a benchmark script or ``train.py`` (a user command with its own files), names a
placeholder (``OUT``, ``RUN/lclr``: an input someone has to supply), needs a GPU this box lacks,
or is known to take longer than the limit (``command_s`` of its rows: the seconds it ran the
last time, a lower bound where it was stopped at a limit). Every other job runs from the
repository root with this interpreter, one after the other, in a process group that is
stopped at the limit; its output goes to ``LOG_DIR/<n>-<command>.log``. The script writes its
own rows (which drops their stale mark; a command that writes none is reported); afterwards
each row of the command gets ``command_s``, and the page is rendered again. ``--stale``: only
commands with a stale row (``stale.py``); ``--match TEXT``: only commands containing TEXT.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, load_rows, save_rows  # noqa: E402

__all__ = ["Job", "plan", "rerun", "run_job"]

_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(/|$)")  # OUT, RUN/lclr, CACHE
_GPU = ("--device cuda", "gpu_session.sh")


@dataclass
class Job:
    """One command to re-run: the rows it refreshes and, if it must not run, why."""

    command: str
    rows: list[dict] = field(default_factory=list)
    stale: bool = False
    skip: str | None = None

    @property
    def known_s(self) -> float | None:
        """The longest ``command_s`` of its rows (None: never timed)."""
        times = [r["command_s"] for r in self.rows if r.get("command_s") is not None]
        return max(times) if times else None


def _why_not(command: str, known_s: float | None, limit_s: float, gpu: bool) -> str | None:
    words = shlex.split(command)
    script = words[1] if len(words) > 1 else ""
    if not ((words[0] == "python" and (script.startswith("benchmarks/") or script == "train.py"))
            or (words[0] == "bash" and script.startswith("benchmarks/"))):
        return "not a benchmark script or train.py (a user command with its own files)"
    named = [w for w in words[2:] if _PLACEHOLDER.match(w)]
    if named:
        return f"names a placeholder to fill in: {' '.join(named)}"
    if not gpu and any(g in command for g in _GPU):
        return "needs a GPU (none on this box)"
    if known_s is not None and known_s > limit_s:
        return f"took {known_s / 60:.0f} min or more last time (limit {limit_s / 60:g} min)"
    return None


def plan(rows: list[dict], *, limit_s: float, stale_keys: set | frozenset = frozenset(),
         stale_only: bool = False, match: str = "", gpu: bool = False) -> list[Job]:
    """The jobs for `rows` in the order of their first row. `stale_keys`: the (task, dataset,
    system) of the stale rows; stale_only / match drop the other jobs; gpu: a GPU is here."""
    jobs: dict[str, Job] = {}
    for r in rows:
        if r["role"] == "paper":
            continue
        job = jobs.setdefault(r["command"], Job(r["command"]))
        job.rows.append(r)
        job.stale |= (r["task"], r["dataset"], r["system"]) in stale_keys
    keep = [j for j in jobs.values() if any(r["role"] == "ours" for r in j.rows)
            and (j.stale or not stale_only) and match in j.command]
    for j in keep:
        j.skip = _why_not(j.command, j.known_s, limit_s, gpu)
    return keep


def run_job(job: Job, limit_s: float, log: Path, root: Path = ROOT) -> tuple[str, float]:
    """Run job.command (its ``python`` = this interpreter) in its own process group from
    `root`, output to `log`; ('ok' | 'failed (exit N)' | 'stopped at the limit', seconds)."""
    words = shlex.split(job.command)
    if words[0] == "python":
        words[0] = sys.executable
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(words, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
            return "stopped at the limit", time.perf_counter() - start
    seconds = time.perf_counter() - start
    return ("ok" if code == 0 else f"failed (exit {code})"), seconds


def _record_seconds(results_dir: Path, command: str, seconds: float) -> list[dict]:
    """Set command_s of every stored row of `command` (a whole number of seconds); returns
    those rows."""
    found = []
    for path in sorted(results_dir.glob("*.json")):
        rows = load_rows(path)
        hit = [r for r in rows if r["command"] == command and r["role"] != "paper"]
        for r in hit:
            r["command_s"] = round(seconds)
        if hit:
            save_rows(path, rows)
        found += hit
    return found


def rerun(rows: list[dict], results_dir: Path, *, limit_min: float, stale_only: bool,
          match: str, dry_run: bool, log_dir: Path | None = None) -> int:
    """Print the plan; unless dry_run, run it and record the seconds. Exit code: 1 if a job
    failed or was stopped, else 0."""
    import stale

    limit_s = limit_min * 60
    keys = {(r["task"], r["dataset"], r["system"]) for r, _ in stale.stale_rows(rows)}
    jobs = plan(rows, limit_s=limit_s, stale_keys=keys, stale_only=stale_only, match=match,
                gpu=shutil.which("nvidia-smi") is not None)
    todo = [j for j in jobs if j.skip is None]
    for j in jobs:
        last = "never timed" if j.known_s is None else f"last {j.known_s:.0f} s"
        what = "run" if j.skip is None else f"skip: {j.skip}"
        print(f"{'stale' if j.stale else 'fresh'} | {len(j.rows)} row(s) | {last} | {what} | "
              f"{j.command}")
    print(f"{len(todo)} of {len(jobs)} command(s) to run, each stopped after {limit_min:g} min")
    if dry_run or not todo:
        return 0
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="rerun-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    bad = 0
    for n, job in enumerate(todo, 1):
        print(f"[{n}/{len(todo)}] {job.command}", flush=True)
        log = log_dir / f"{n}-{re.sub(r'[^A-Za-z0-9]+', '_', job.command)[:80]}.log"
        status, seconds = run_job(job, limit_s, log)
        print(f"[{n}/{len(todo)}] {status} after {seconds:.0f} s (log: {log})", flush=True)
        bad += status != "ok"
        if status.startswith("failed"):
            continue
        after = _record_seconds(results_dir, job.command, seconds)  # stopped: a lower bound
        if status == "ok" and [r["measured"] for r in after] == [r["measured"] for r in job.rows]:
            print(f"[{n}/{len(todo)}] it rewrote none of its rows (a command that writes no "
                  "row): they stay as they were; re-measure them by hand", flush=True)
    return 1 if bad else 0
