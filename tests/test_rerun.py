"""benchmarks/rerun.py (`report.py --rerun`): which commands behind the results rows run,
which are skipped and why, and how a run is stopped at its limit."""

import json
import sys

from benchmarks import report, rerun
from tests.test_results_report import _row, _write


def _plan(rows, **kw):
    kw.setdefault("limit_s", 1800)
    return {j.command: j for j in rerun.plan(rows, **kw)}


def test_one_job_per_command_with_its_peer_rows_and_no_paper_rows():
    a = "python benchmarks/align_vs_eflomal.py --suite small --seeds 3"
    rows = [_row(command=a), _row(dataset="x", command=a),
            _row(system="eflomal", role="peer", command=a),
            _row(system="paper", role="paper", command="Och & Ney (2003), Table 1"),
            _row(system="eflomal", role="peer", command="python benchmarks/peer_only.py")]
    jobs = _plan(rows)
    assert list(jobs) == [a]  # a peer-only command refreshes nothing of ours
    assert len(jobs[a].rows) == 3 and jobs[a].skip is None


def test_skip_reasons():
    rows = [_row(command="aligners align -s corpus.src -t corpus.tgt -o out"),
            _row(dataset="a", command="python benchmarks/lclr.py --pairs 400 --weights RUN/lclr"),
            _row(dataset="b", command="bash benchmarks/gpu_session.sh OUT"),
            _row(dataset="c", command="python benchmarks/gpu.py --device cuda --cases x"),
            _row(dataset="d", command="python benchmarks/phrasal.py --experiment big",
                 command_s=4000),
            _row(dataset="e", command="python train.py experiment=hmm_agreement_hansards",
                 command_s=100)]
    skip = {c: j.skip for c, j in _plan(rows).items()}
    assert skip["aligners align -s corpus.src -t corpus.tgt -o out"].startswith("not a benchmark")
    assert "RUN/lclr" in skip["python benchmarks/lclr.py --pairs 400 --weights RUN/lclr"]
    assert "OUT" in skip["bash benchmarks/gpu_session.sh OUT"]
    assert "GPU" in skip["python benchmarks/gpu.py --device cuda --cases x"]
    assert "67 min" in skip["python benchmarks/phrasal.py --experiment big"]
    assert skip["python train.py experiment=hmm_agreement_hansards"] is None
    with_gpu = _plan(rows, gpu=True, limit_s=5000)
    assert with_gpu["python benchmarks/gpu.py --device cuda --cases x"].skip is None
    assert with_gpu["python benchmarks/phrasal.py --experiment big"].skip is None


def test_stale_only_and_match_filters():
    a, b = "python benchmarks/lattices.py --cases hmm", "python benchmarks/lclr.py --pairs 400"
    rows = [_row(command=a), _row(dataset="x", system="s", command=b)]
    assert set(_plan(rows, stale_keys={("word", "x", "s")}, stale_only=True)) == {b}
    assert set(_plan(rows, match="lattices")) == {a}
    assert _plan(rows, stale_keys={("word", "x", "s")})[b].stale


def test_run_job_ok_failed_and_stopped_at_the_limit(tmp_path):
    def run(code, limit):
        job = rerun.Job(f'python -c "{code}"')
        return rerun.run_job(job, limit, tmp_path / "log", root=tmp_path)

    status, seconds = run("print(42)", 60)
    assert status == "ok" and (tmp_path / "log").read_text() == "42\n"
    assert run("import sys; sys.exit(3)", 60)[0] == "failed (exit 3)"
    # the child's own child is stopped too (the whole process group)
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)']); time.sleep(60)")
    status, seconds = run(code, 1.5)
    assert status == "stopped at the limit" and 1.5 <= seconds < 30


def test_seconds_are_recorded_on_the_command_rows_and_render_unchanged(tmp_path):
    a = "python benchmarks/lattices.py --cases hmm"
    folder = _write(tmp_path, [_row(command=a), _row(dataset="x", command="python other.py")])
    page = report.render_results(report.read_results(folder))
    rerun._record_seconds(folder, a, 12.6)
    stored = json.loads((folder / "word.json").read_text())
    assert stored[0]["command_s"] == 13 and "command_s" not in stored[1]
    assert report.render_results(report.read_results(folder)) == page
    assert _plan(report.read_results(folder))[a].known_s == 13


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys, monkeypatch):
    folder = _write(tmp_path, [_row(command="bash benchmarks/gpu_session.sh OUT")])
    out = tmp_path / "RESULTS.md"
    monkeypatch.setattr(sys, "argv", ["report.py"])
    assert report.main(["--rerun", "--dry-run", "--results", str(folder), "--out", str(out),
                        "--readme", ""]) == 0
    text = capsys.readouterr().out
    assert "skip: names a placeholder to fill in: OUT" in text and "0 of 1 command(s)" in text
    assert not out.exists()
