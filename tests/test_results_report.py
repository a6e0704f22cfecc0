"""benchmarks/report.py (RESULTS.md and README blocks from result rows) and the row store of
benchmarks/harness.py, on a small JSON."""

import json

import pytest

from benchmarks import report
from benchmarks.report import ResultsError

WORD_HEAD = ("| data | system | AER | AER ∩ | AER gdfa | wall s | CPU s | RSS MiB "
             "| vs peer (wall / CPU) | ref |")


def _row(**kw):
    row = {"task": "word", "dataset": "hansards-20k", "system": "aligners hmm", "role": "ours",
           "metrics": {}, "wall_s": None, "cpu_s": None, "peak_rss_mib": None,
           "cuda_peak_mib": None, "peer": None, "headline": False, "machine": "box A",
           "command": "python benchmarks/align_vs_eflomal.py --suite hansards-20k",
           "measured": "2026-11-26 at commit abc1234", "source": "test", "note": None}
    row.update(kw)
    return row


ROWS = [  # deliberately out of the documented order
    _row(dataset="pcedt-csen", system="eflomal 2.0.0", role="peer",
         metrics={"aer": 0.2479, "aer_intersect": 0.2587, "aer_gdfa": 0.2479}, wall_s=31.7,
         cpu_s=7.6, peak_rss_mib=30, command="python benchmarks/align_vs_eflomal.py --suite "
         "pcedt-csen"),
    _row(dataset="pcedt-csen", system="aligners bayesian",
         metrics={"aer": 0.2397, "aer_intersect": 0.2471, "aer_gdfa": 0.2397}, wall_s=70.4,
         cpu_s=8.4, peak_rss_mib=175, peer="eflomal 2.0.0", headline=True,
         command="python benchmarks/align_vs_eflomal.py --suite pcedt-csen",
         note="mean of 3 seeds"),
    _row(metrics={"aer": 0.0837}, wall_s=68.5, peak_rss_mib=518),
]


def _write(tmp_path, rows, name="word.json"):
    folder = tmp_path / "results"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(rows), encoding="utf-8")
    return folder


def test_word_table_lines_order_missing_values_and_references(tmp_path):
    rows = report.read_results(_write(tmp_path, ROWS))
    text = report.render_results(rows)
    lines = text.splitlines()
    start = lines.index(WORD_HEAD)
    assert lines[start:start + 5] == [
        WORD_HEAD,
        "|---|---|---|---|---|---|---|---|---|---|",
        # groups in the table's data-set order (Hansards first); missing values are "—"
        "| Hansards En-Fr 20k (+ test, trial) | aligners hmm | 0.0837 | — | — | 68.5 | — | 518 "
        "| — | [1] |",
        # ours before the peer; the peer ratio = ours / the peer's time, same data set
        "| PCEDT Cs-En (515) | aligners bayesian | 0.2397 | 0.2471 | 0.2397 | 70.4 | 8.4 | 175 "
        "| 2.22x / 1.11x eflomal 2.0.0 | [2] |",
        "| PCEDT Cs-En (515) | eflomal 2.0.0 | 0.2479 | 0.2587 | 0.2479 | 31.7 | 7.6 | 30 "
        "| — | [3] |",
    ]
    assert lines[start + 6:start + 9] == [
        "- [1] `python benchmarks/align_vs_eflomal.py --suite hansards-20k` · box A · measured "
        "2026-11-26 at commit abc1234 (test)",
        "- [2] `python benchmarks/align_vs_eflomal.py --suite pcedt-csen` · box A · measured "
        "2026-11-26 at commit abc1234 (test). mean of 3 seeds",
        "- [3] `python benchmarks/align_vs_eflomal.py --suite pcedt-csen` · box A · measured "
        "2026-11-26 at commit abc1234 (test)",
    ]
    # P and R: no row has them, so those columns are left out; a task without rows says so
    assert "| P |" not in text and "(no rows yet)" in text
    assert text.startswith("# Results\n") and text.endswith("\n")


def test_a_closer_look_table_shows_its_data_sets_alone(tmp_path):
    """The full-set Hansards table (Table.only) holds the hansards-full rows and no other,
    with its 347 columns; the main word table keeps every row."""
    full = _row(dataset="hansards-full", metrics={"aer": 0.055, "aer_347": 0.0535,
                                                  "f1_347": 0.9447}, wall_s=620.9,
                command="python benchmarks/align_vs_eflomal.py --suite hansards-full")
    text = report.render_results(report.read_results(_write(tmp_path, [*ROWS, full])))
    part = text[text.index("### The literature's Hansards table"):]
    part = part[:part.index("\n## ")]
    assert "| AER 347 | F1 347 | AER 447 |" in part
    assert "| Hansards En-Fr full (1.13M) | aligners hmm | 0.0535 | 0.9447 | 0.0550 |" in part
    assert "PCEDT" not in part and "20k" not in part
    main = text[:text.index("### The literature's Hansards table")]
    assert "Hansards En-Fr full (1.13M) | aligners hmm" in main and "PCEDT" in main


def test_numbers_are_printed_as_stored():
    assert report.show(None) == "—"
    assert report.show(75.0) == "75.0" and report.show(173) == "173"
    assert report.show(0.0587, "ms") == "58.7" and report.show(2e-05) == "2e-05"
    assert report.show(0.067, digits=4) == "0.0670"


@pytest.mark.parametrize("bad, message", [
    (lambda r: r.pop("command"), "missing key(s) command"),
    (lambda r: r.update(speed=1), "unknown key(s) speed"),
    (lambda r: r.update(role="mine"), "role must be one of"),
    (lambda r: r.update(wall_s=-1), "wall_s must be null or a number >= 0"),
    (lambda r: r.update(metrics={"aer": "0.1"}), "metrics must map names to finite numbers"),
    (lambda r: r.update(task="nope"), "unknown task 'nope'"),
])
def test_a_bad_row_is_one_clear_error_naming_file_and_row(tmp_path, bad, message, capsys):
    rows = [dict(r) for r in ROWS]
    bad(rows[1])
    folder = _write(tmp_path, rows)
    with pytest.raises(ResultsError, match="word.json row 2: ") as err:
        report.read_results(folder)
    assert message in str(err.value)
    assert report.main(["--results", str(folder), "--out", str(tmp_path / "R.md"),
                        "--readme", ""]) == 2
    out = capsys.readouterr().err
    assert out.count("\n") == 1 and out.startswith("report: error: ") and message in out
    assert not (tmp_path / "R.md").exists()


def test_duplicates_and_missing_peers_are_errors(tmp_path):
    folder = _write(tmp_path, ROWS)
    (folder / "more.json").write_text(json.dumps([ROWS[2]]), encoding="utf-8")
    with pytest.raises(ResultsError, match="word.json row 3: duplicate of .*more.json row 1"):
        report.read_results(folder)
    (folder / "more.json").unlink()
    rows = [dict(r) for r in ROWS]
    rows[1]["peer"] = "fast_align"
    with pytest.raises(ResultsError, match="peer 'fast_align' has no row"):
        report.render_results(report.read_results(_write(tmp_path, rows)))


README = """# aligners
intro
<!-- results:which-model -->
stale table
<!-- /results:which-model -->
text between
<!-- results:word -->
<!-- /results:word -->
end
"""


def test_readme_blocks_are_refilled_from_the_rows(tmp_path):
    rows = report.read_results(_write(tmp_path, ROWS))
    out = report.refresh_blocks(README, rows)
    lines = out.splitlines()
    assert lines[:2] == ["# aligners", "intro"] and lines[-1] == "end"
    assert "stale table" not in out and "text between" in out
    table = lines[lines.index("<!-- results:which-model -->") + 1:
                  lines.index("<!-- /results:which-model -->")]
    assert table[0] == ("| data | default AER · time | hmm AER · time | gappy-hsmm AER · time "
                        "| bayesian AER · time | eflomal AER (better of ∩, gdfa) · time "
                        "| command |")
    assert table[4] == ("| Hansards En-Fr 200k | — | — | — | — | — "  # nothing measured yet
                        "| `python benchmarks/align_vs_eflomal.py --suite hansards-200k` |")
    assert table[3] == ("| Hansards En-Fr 20k | — | 0.0837 · 68.5 s | — | — | — "
                        "| `python benchmarks/align_vs_eflomal.py --suite hansards-20k` |")
    assert table[8] == ("| PCEDT Cs-En | — | — | — | 0.2397 · 70.4 s | 0.2479 · 31.7 s "  # gdfa < ∩
                        "| `python benchmarks/align_vs_eflomal.py --suite pcedt-csen` |")
    assert len(table) == 2 + len(report.WHICH_MODEL)
    head = lines[lines.index("<!-- results:word -->") + 1]
    assert head == ("- PCEDT Cs-En (515), aligners bayesian: AER 0.2397; AER ∩ 0.2471; "
                    "AER gdfa 0.2397; wall 70.4 s; CPU 8.4 s; wall / CPU vs eflomal 2.0.0: "
                    "2.22x / 1.11x (`python benchmarks/align_vs_eflomal.py --suite pcedt-csen`)")
    assert report.refresh_blocks(out, rows) == out  # idempotent
    only = "<!-- results:word@bayesian -->\n<!-- /results:word@bayesian -->\n"
    assert report.refresh_blocks(only, rows).splitlines()[1] == head  # a system filter
    assert "(no headline rows)" in report.refresh_blocks(only.replace("bayesian", "hmm"), rows)
    with pytest.raises(ResultsError, match="unknown results block 'nope'"):
        report.refresh_blocks("<!-- results:nope -->\n<!-- /results:nope -->\n", rows)
    with pytest.raises(ResultsError, match="unbalanced"):
        report.refresh_blocks("<!-- results:word -->\n", rows)


def test_check_mode_and_one_command_writes_both_files(tmp_path, capsys):
    folder = _write(tmp_path, ROWS)
    out, readme = tmp_path / "RESULTS.md", tmp_path / "README.md"
    readme.write_text(README, encoding="utf-8")
    args = ["--results", str(folder), "--out", str(out), "--readme", str(readme)]
    assert report.main(args + ["--check"]) == 1 and not out.exists()
    assert "out of date" in capsys.readouterr().err
    assert report.main(args) == 0
    assert out.read_text(encoding="utf-8") == report.render_results(report.read_results(folder))
    assert "0.0837 · 68.5 s" in readme.read_text(encoding="utf-8")
    assert report.main(args + ["--check"]) == 0


def test_write_rows_replaces_by_task_data_set_and_system(tmp_path):
    from harness import load_rows, write_rows

    write_rows("word", ROWS, tmp_path)
    new = dict(ROWS[2], metrics={"aer": 0.08}, wall_s=60.0)
    extra = dict(ROWS[2], dataset="wpt-roen")
    path = write_rows("word", [new, extra], tmp_path)
    rows = load_rows(path)
    assert [r["dataset"] for r in rows] == ["pcedt-csen", "pcedt-csen", "hansards-20k",
                                            "wpt-roen"]
    assert rows[2]["metrics"] == {"aer": 0.08} and rows[2]["wall_s"] == 60.0
    assert list(rows[0]) == list(ROWS[0])  # keys in the fixed order
    with pytest.raises(ResultsError, match="new row 1: missing key"):
        write_rows("word", [{"task": "word"}], tmp_path)


def test_the_committed_results_render_to_the_committed_files():
    """RESULTS.md and README.md's blocks are what `python benchmarks/report.py` writes."""
    assert report.main(["--check"]) == 0


def test_stale_rows_are_marked_in_the_file_and_rendered_with_a_dagger(tmp_path):
    """benchmarks/stale.py: a row of ours measured at a commit whose family code changed
    since (or at a commit this history lacks) is marked in its results file, once; a peer's
    row never; the page shows the mark without git."""
    import subprocess

    from benchmarks import stale

    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=report.ROOT).stdout.strip()
    rows = [_row(measured="at commit 0000000deadbeef"),  # not in this history: stale
            _row(dataset="rwth-deen-europarl", measured=f"at commit {head}"),  # current
            _row(dataset="pcedt-csen", system="eflomal 2.0.0", role="peer",
                 measured="at commit 0000000deadbeef")]
    folder = _write(tmp_path, rows)
    assert stale.code_of(rows[0]) and not stale.code_of(rows[2])
    assert [r["dataset"] for r, _ in stale.stale_rows(rows)] == ["hansards-20k"]
    for _ in range(2):  # marking twice marks once
        assert stale.main(["--mark", "--results", str(folder)]) == 0
    stored = json.loads((folder / "word.json").read_text())
    assert stored[0]["note"].startswith("† stale") and stored[0]["note"].count("†") == 1
    assert stored[1]["note"] is None and stored[2]["note"] is None
    page = report.render_results(report.read_results(folder))
    assert "| aligners hmm † |" in page and "| eflomal 2.0.0 |" in page


def test_a_comment_or_docstring_change_is_not_a_code_change():
    """stale.py compares syntax trees without docstrings: comments, docstrings and layout do
    not make a row stale; any change of code (a constant included) does."""
    from benchmarks import stale

    a = 'def f(x):\n    """Doc."""\n    return x + 1  # one\n'
    b = ('def f(x):\n    """Another doc,\n    longer."""\n    # a comment\n'
         '    return (x +\n            1)\n')
    assert stale._code(a) == stale._code(b)
    assert stale._code(a) != stale._code(a.replace("x + 1", "x + 2"))
    assert stale._code(a) != stale._code(a.replace('"""Doc."""', 'y = "Doc."'))
    assert stale._code("def (:") is None and stale._code(None) is None
