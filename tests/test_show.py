"""`aligners show`: the terminal grid, the HTML page's data and, in a headless browser, the
page itself. Fixtures: tests/data/show_* (a hand-worked 3x4 pair + a pair of HTML-like
words; a monolingual jacana file with phrase links); real data: Hansards (NAACL gold)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from aligners.cli import main
from aligners.data.gold import read_alignment_file, read_snum_text
from aligners.metrics import evaluate_alignments
from aligners.show.view import blocks
from tests.conftest import shared_path

DATA = Path(__file__).parent / "data"
SRC, TGT = str(DATA / "show_src.txt"), str(DATA / "show_tgt.txt")
GOLD = str(DATA / "show_gold.txt")
PRED_A, PRED_B = str(DATA / "show_pred_a.txt"), str(DATA / "show_pred_b.txt")
MONO = str(DATA / "show_mono.json")
MONO_A, MONO_B = str(DATA / "show_mono_pred_a.txt"), str(DATA / "show_mono_pred_b.txt")
ROOT = Path(__file__).resolve().parent.parent


def _run(capsys, *argv):
    rc = main(["show", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def read_embedded(page: str) -> dict:
    """The view embedded in a page written by `render_page`."""
    start_tag = '<script type="application/json" id="aligners-data">'
    start = page.index(start_tag) + len(start_tag)
    return json.loads(page[start:page.index("</script>", start)])


def _page(tmp_path, capsys, *argv) -> tuple[str, dict]:
    path = tmp_path / "page.html"
    rc, _, err = _run(capsys, *argv, "--html", str(path))
    assert rc == 0, err
    text = path.read_text(encoding="utf-8")
    return text, read_embedded(text)


# ---- terminal

def test_terminal_grid_of_a_hand_worked_pair(capsys):
    # gold S = {0-0, 1-2, 2-1}, P-only = {2-3, 1-3}; predicted {0-0, 2-1, 2-3, 0-1}:
    # hits 0-0 2-1, possible hit 2-3, false 0-1, miss 1-2, unpredicted possible 1-3;
    # P = 3/4, R = 2/3, AER = 1 - (2 + 3) / (4 + 3) = 2/7, F1 = 12/17
    rc, out, _ = _run(capsys, "-s", SRC, "-t", TGT, "--gold", GOLD, "-a", PRED_A, "--pair", "1")
    assert rc == 0
    assert out.split("\n\n")[0].splitlines() == [
        "pair 1/2: 3 source x 4 target words",
        "          c n d",
        "          h o o",
        "        l a i r",
        "        e t r t",
        "0 the   # x . .",
        "1 black . . O ?",
        "2 cat   . # . +",
        "P 75.0%  R 66.7%  F1 70.6%  AER 28.6%  (hits 2 sure + 1 possible, misses 1, false 1)",
    ]
    assert "x  false link: predicted, not in possible gold" in out  # the legend
    assert "\x1b[" not in out  # stdout is not a terminal: no colours


def test_colours_only_on_a_terminal_and_not_with_no_color(capsys, monkeypatch):
    argv = ("-s", SRC, "-t", TGT, "--gold", GOLD, "-a", PRED_A, "--pair", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _, out, _ = _run(capsys, *argv)
    assert "\x1b[1;32m#\x1b[0m" in out and "\x1b[1;31mx\x1b[0m" in out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _, out, _ = _run(capsys, *argv, "--no-color")
    assert "\x1b[" not in out
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _, out, _ = _run(capsys, *argv)
    assert "\x1b[" not in out


def test_input_file_gold_only_and_links_only_views(tmp_path, capsys):
    bitext = tmp_path / "pairs.txt"
    bitext.write_text("the black cat ||| le chat noir dort\nx y ||| y z w\n")
    _, out, _ = _run(capsys, "-i", str(bitext), "-a", PRED_A, "--pairs", "1-1")
    assert "0 the   # # . ." in out and "2 cat   . # . #" in out and "pair 2/2" not in out
    _, out, _ = _run(capsys, "-i", str(bitext), "--gold", GOLD, "--pair", "1")
    assert "1 black . . # ?" in out and "?  possible gold link" in out and "P " not in out
    _, view = _page(tmp_path, capsys, "-i", str(bitext), "--gold", GOLD)
    assert [c for c, _, _ in view["legend"]] == ["sure", "gold_possible"]
    assert view["pairs"][0]["grids"][0]["cells"] == {
        "sure": [[0, 0], [1, 2], [2, 1]], "gold_possible": [[1, 3], [2, 3]]}
    assert view["systems"] == [] and view["has_gold"]


def test_monolingual_gold_carries_the_text_and_two_systems(capsys):
    rc, out, _ = _run(capsys, "--gold", MONO, "-a", MONO_A, "-a", MONO_B, "--pair", "2")
    assert rc == 0
    assert "pair 2/2 (id m2): 5 source x 5 target words" in out
    a, b = out.split("[show_mono_pred_b.txt]")
    assert "1 do   . # O O ." in a and "1 do   . # # O ." in b
    assert "(hits 5 sure + 0 possible, misses 6, false 0)" in b


@pytest.mark.parametrize("argv, message", [
    (["-s", SRC, "-t", TGT, "-a", "nope.txt"], "nope.txt: file not found"),
    (["-s", SRC, "-t", TGT, "-a", PRED_A, "--pair", "3"], "pair 3 is out of range"),
    (["-s", SRC, "-t", TGT, "-a", PRED_A, "--pairs", "2-9"], "holds 2 sentence pairs"),
    (["-s", SRC, "-a", PRED_A], "go together"),
    (["-s", SRC, "-t", TGT], "nothing to show"),
    (["-a", PRED_A], "no sentences"),
    (["--gold", MONO, "-s", SRC, "-t", TGT], "carries its own sentences"),
])
def test_input_errors_are_one_line(capsys, argv, message):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    assert message in err and err.count("\n") == 1, err


def test_links_outside_the_sentence_and_line_counts(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("0-0\n1-5\n")
    rc, _, err = _run(capsys, "-s", SRC, "-t", TGT, "-a", str(bad))
    assert rc == 2 and f"{bad}:2: link (1, 5)" in err and err.count("\n") == 1
    bad.write_text("0-0\n0-0\n0-0\n")
    rc, _, err = _run(capsys, "-s", SRC, "-t", TGT, "--gold", str(bad), "-a", PRED_A)
    assert rc == 2 and "3 alignments but 2 source sentences" in err and str(bad) in err
    mono = tmp_path / "mono.align"  # a monolingual prediction outside the gold's sentences
    mono.write_text("0-0\n9-0\n")
    rc, _, err = _run(capsys, "--gold", MONO, "-a", str(mono))
    assert rc == 2 and f"{mono}:2: link (9, 0)" in err


# ---- the page's data

def _check_view(view, gold, systems):
    """Per pair and system: the cell classes' sizes are the scorer's counts."""
    assert len(view["pairs"]) == len(gold)
    for p, g in zip(view["pairs"], gold):
        for grid, (_, als) in zip(p["grids"], systems, strict=True):
            t = als[p["n"] - 1]
            c = evaluate_alignments([g], [t], breakdowns=False).counts
            cells = {k: len(v) for k, v in grid["cells"].items()}
            assert cells["hit"] == c.hit_sure
            assert cells["hit"] + cells["hit_possible"] == c.hit_possible
            assert cells["miss"] == c.sure - c.hit_sure
            assert cells["false"] == c.predicted - c.hit_possible
            assert cells["possible"] == len(g.possible - g.sure - t.possible)
            assert grid["scores"]["counts"] == {"predicted": c.predicted, "sure": c.sure,
                                                "hit_sure": c.hit_sure,
                                                "hit_possible": c.hit_possible}
            assert grid["scores"]["aer"] == pytest.approx(c.aer)


def _check_corpus(view, capsys, evaluate_argv, tests):
    for system, test in zip(view["systems"], tests, strict=True):
        assert main(["evaluate", *evaluate_argv, "--test", test, "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        report = dict(system["report"])
        text = report.pop("text")
        assert report == printed
        assert main(["evaluate", *evaluate_argv, "--test", test]) == 0
        assert text == capsys.readouterr().out.rstrip("\n")


def test_page_counts_and_corpus_scores_equal_the_scorer(tmp_path, capsys):
    page, view = _page(tmp_path, capsys, "-s", SRC, "-t", TGT, "--gold", GOLD,
                       "-a", PRED_A, "-a", PRED_B, "--title", "<i>A & B</i>")
    assert "<title>&lt;i&gt;A &amp; B&lt;/i&gt;</title>" in page and "<i>" not in page
    gold = read_alignment_file(GOLD)
    systems = [(n, read_alignment_file(n)) for n in (PRED_A, PRED_B)]
    _check_view(view, gold, systems)
    assert [s["name"] for s in view["systems"]] == ["show_pred_a.txt", "show_pred_b.txt"]
    _check_corpus(view, capsys, ["--gold", GOLD, "-s", SRC, "-t", TGT], [PRED_A, PRED_B])
    assert view["pairs"][0]["grids"][0]["posteriors"][0] == [0, 0, 0.9]
    # the words are data, never markup: the page's only closing script tags are its own
    assert view["pairs"][1]["src"][1] == "<script>alert(1)</script>"
    assert page.count("</script>") == 2 and "<script>alert" not in page
    assert "<b>" not in page and "&amp;" not in page.split("<script", 1)[1]
    assert view["pairs"][1]["tgt"][1:] == ['"&amp;"', "</script><b>z"]


def test_hansards_page_with_two_systems(tmp_path, capsys):
    root = shared_path("data", "hansards-enfr-naacl2003", "test")
    sym = shared_path("oracles", "symmetrize")
    gold_path = str(root / "test.wa.nonullalign")
    src, tgt = str(root / "test.e"), str(root / "test.f")
    tests = [str(sym / "eflomal.enfr.grow-diag-final-and"), str(sym / "eflomal.enfr.intersect")]
    page, view = _page(tmp_path, capsys, "-s", src, "-t", tgt, "--gold", gold_path,
                       "-a", tests[0], "-a", tests[1])
    snums = [s for s, _ in read_snum_text(src)]
    gold = read_alignment_file(gold_path, snums=snums)
    _check_view(view, gold, [(t, read_alignment_file(t)) for t in tests])
    _check_corpus(view, capsys, ["--gold", gold_path, "-s", src, "-t", tgt], tests)
    assert view["systems"][0]["report"]["micro"]["aer"] == pytest.approx(0.0805, abs=5e-4)
    assert len(page) < 2_000_000 and page.count("<td") == 0  # grids are drawn on demand


def test_monolingual_phrase_blocks(tmp_path, capsys):
    assert blocks({(1, 1), (2, 1), (0, 0)}) == [(1, 2, 1, 1)]
    assert blocks({(1, 1), (1, 2), (2, 2)}) == []  # connected but not a rectangle
    assert blocks({(0, 0), (0, 2), (1, 0), (1, 2)}) == []  # a rectangle with a gap
    _, view = _page(tmp_path, capsys, "--gold", MONO, "-a", MONO_A, "-a", MONO_B)
    p1, p2 = view["pairs"]
    assert (p1["id"], p2["id"]) == ("m1", "m2")
    assert p1["gold_blocks"] == [[1, 2, 1, 1]] and p2["gold_blocks"] == [[1, 3, 1, 3]]
    assert [g["blocks"] for g in p1["grids"]] == [[], [[1, 2, 1, 1]]]
    assert [g["blocks"] for g in p2["grids"]] == [[], []]
    _check_view(view, read_alignment_file(MONO),
                [(n, read_alignment_file(n)) for n in (MONO_A, MONO_B)])
    _check_corpus(view, capsys, ["--gold", MONO], [MONO_A, MONO_B])


def test_page_output_rules(tmp_path, capsys, monkeypatch):
    copy = tmp_path / "pred.txt"
    shutil.copy(PRED_A, copy)
    rc, _, err = _run(capsys, "-s", SRC, "-t", TGT, "-a", str(copy), "--html", str(copy))
    assert rc == 2 and "is also an input" in err and copy.read_text() == Path(PRED_A).read_text()
    page = tmp_path / "page.html"
    page.write_text("old")
    rc, _, err = _run(capsys, "-s", SRC, "-t", TGT, "-a", PRED_A, "--html", str(page),
                      "--pair", "1")
    assert rc == 2 and "--pair/--pairs" in err

    def broken(*_):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    rc, _, err = _run(capsys, "-s", SRC, "-t", TGT, "-a", PRED_A, "--html", str(page))
    assert rc == 2 and "disk full" in err  # a failed write is one line (aligners.outputs)
    assert page.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["page.html", "pred.txt"]
    monkeypatch.undo()
    assert _run(capsys, "-s", SRC, "-t", TGT, "-a", PRED_A, "--html", str(page))[0] == 0
    assert page.read_text().startswith("<!DOCTYPE html>") and oct(page.stat().st_mode)[-3:] == "644"
    assert sorted(os.listdir(tmp_path)) == ["page.html", "pred.txt"]


def test_show_does_not_import_torch():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "aligners.cli", "show", "-s", SRC, "-t", TGT,
         "-a", PRED_A, "--pair", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    modules = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:")]
    assert "aligners.show.view" in modules
    assert not [m for m in modules if m == "torch" or m.startswith("torch.")]


# ---- a real headless browser

@pytest.fixture(scope="module")
def browser():
    for exe in ("chromium", "chromedriver"):
        if shutil.which(exe) is None:
            pytest.skip(f"{exe} not installed (Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="selenium not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="aligners-show-chromium-")
    opts = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                 "--window-size=1400,900"):
        opts.add_argument(flag)
    opts.binary_location = shutil.which("chromium")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _open(driver, path):
    from selenium.webdriver.common.by import By

    driver.get(Path(path).resolve().as_uri())
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    return By


def test_browser_shows_a_clicked_pair(browser, tmp_path, capsys):
    _, view = _page(tmp_path, capsys, "-s", SRC, "-t", TGT, "--gold", GOLD,
                    "-a", PRED_A, "-a", PRED_B)
    by = _open(browser, tmp_path / "page.html")
    rows = browser.find_elements(by.CSS_SELECTOR, "table.pairs tbody tr")
    assert [r.get_attribute("data-n") for r in rows] == ["1", "2"]
    corpus = browser.find_elements(by.CSS_SELECTOR, "#corpus-scores tr[data-system]")
    assert len(corpus) == 2 and "show_pred_b.txt" in corpus[1].text
    rows[1].click()
    assert browser.find_element(by.CSS_SELECTOR, "#detail h2").text.startswith("pair 2/2")
    figures = browser.find_elements(by.CSS_SELECTOR, "figure.grid")
    assert len(figures) == 2
    for fig, grid in zip(figures, view["pairs"][1]["grids"]):
        assert len(fig.find_elements(by.CSS_SELECTOR, "td.c")) == 2 * 3
        assert len(fig.find_elements(by.CSS_SELECTOR, "td.c.hit")) == len(grid["cells"]["hit"])
        assert fig.find_element(by.CSS_SELECTOR, ".count-miss").text == str(
            len(grid["cells"]["miss"]))
    heads = [th.get_attribute("textContent") for th in figures[0].find_elements(
        by.CSS_SELECTOR, "th.row")]
    assert heads == ["x", "<script>alert(1)</script>"]  # shown as text, not run
    rows[0].click()
    fig = browser.find_elements(by.CSS_SELECTOR, "figure.grid")[0]
    assert len(fig.find_elements(by.CSS_SELECTOR, "td.c")) == 3 * 4
    cell = fig.find_element(by.CSS_SELECTOR, 'td.c[data-i="0"][data-j="1"]')
    assert cell.get_attribute("class").split() == ["c", "false"]
    assert "hit" in fig.find_element(by.CSS_SELECTOR,
                                     'td.c[data-i="2"][data-j="1"]').get_attribute("class")
    search = browser.find_element(by.ID, "search")
    search.send_keys("noir")
    assert len(browser.find_elements(by.CSS_SELECTOR, "table.pairs tbody tr")) == 1
    search.clear()
    search.send_keys("zzz-not-a-word")
    assert browser.find_elements(by.CSS_SELECTOR, "table.pairs tbody tr") == []
    assert browser.get_log("browser") == []


def test_browser_sorts_by_aer_and_draws_phrase_blocks(browser, tmp_path, capsys):
    _, view = _page(tmp_path, capsys, "--gold", MONO, "-a", MONO_A, "-a", MONO_B)
    by = _open(browser, tmp_path / "page.html")
    browser.find_element(by.CSS_SELECTOR, 'table.pairs th[data-key="aer0"]').click()
    first = browser.find_element(by.CSS_SELECTOR, "table.pairs tbody tr")
    worst = max(view["pairs"], key=lambda p: p["grids"][0]["scores"]["aer"])
    assert first.get_attribute("data-n") == str(worst["n"])
    browser.find_element(by.CSS_SELECTOR, 'table.pairs tr[data-n="1"]').click()
    fig_b = browser.find_elements(by.CSS_SELECTOR, "figure.grid")[1]

    def classes(fig, i, j):
        return set(fig.find_element(by.CSS_SELECTOR, f'td.c[data-i="{i}"][data-j="{j}"]')
                   .get_attribute("class").split())

    assert {"hit", "bt", "bl", "br"} <= classes(fig_b, 1, 1)  # block rows 1-2, column 1
    assert {"hit", "bb", "bl", "br"} <= classes(fig_b, 2, 1) and "bt" not in classes(fig_b, 2, 1)
    browser.find_element(by.CSS_SELECTOR, 'table.pairs tr[data-n="2"]').click()
    fig_a = browser.find_elements(by.CSS_SELECTOR, "figure.grid")[0]
    assert {"miss", "gt", "gr"} <= classes(fig_a, 1, 3)  # gold block rows 1-3 x cols 1-3
    assert {"hit"} == classes(fig_a, 2, 2) - {"c"}  # inside the block: no edge
    assert browser.get_log("browser") == []


def test_terminal_grid_has_a_size_limit(tmp_path, capsys):
    """Issue 36 item 20: a pair longer than MAX_GRID_TOKENS a side is named, not drawn (a
    5,000 x 5,000 pair printed 50 MB)."""
    from aligners.commands.show import MAX_GRID_TOKENS

    n = MAX_GRID_TOKENS + 1
    (tmp_path / "a.en").write_text("the house\n" + " ".join(["w"] * n) + "\n")
    (tmp_path / "a.fr").write_text("la maison\nv\n")
    (tmp_path / "a.align").write_text("0-0 1-1\n0-0\n")
    rc, out, _ = _run(capsys, "-s", str(tmp_path / "a.en"), "-t", str(tmp_path / "a.fr"),
                      "-a", str(tmp_path / "a.align"), "--no-color")
    assert rc == 0 and f"pair 2: {n} x 1 tokens, not drawn" in out
    assert "pair 1/2" in out and len(out) < 5000


def test_browser_labels_phrase_search_and_empty_filter(browser, tmp_path, capsys):
    """Issue 36 item 20: --label names the systems (list columns too), a phrase search marks
    its words and keeps the pairs holding it, and a filter that matches nothing shows no
    pair (not the one shown before)."""
    _page(tmp_path, capsys, "-s", SRC, "-t", TGT, "--gold", GOLD, "-a", PRED_A, "-a", PRED_B,
          "--label", "base", "--label", "new")
    by = _open(browser, tmp_path / "page.html")
    heads = [th.text for th in browser.find_elements(by.CSS_SELECTOR, "table.pairs th")]
    assert "AER base" in heads and "AER new" in heads and "AER 1" not in heads
    search = browser.find_element(by.ID, "search")
    search.send_keys("chat noir")
    rows = browser.find_elements(by.CSS_SELECTOR, "table.pairs tbody tr")
    assert [r.get_attribute("data-n") for r in rows] == ["1"]
    marked = browser.find_elements(by.CSS_SELECTOR, "figure.grid th.match")
    assert sorted({m.get_attribute("textContent") for m in marked}) == ["chat", "noir"]
    search.clear()
    search.send_keys("zzz-not-a-word")
    assert browser.find_elements(by.CSS_SELECTOR, "figure.grid") == []
    assert "no pair matches" in browser.find_element(by.ID, "detail").text
    assert browser.get_log("browser") == []


def test_label_count_must_match(tmp_path, capsys):
    rc, _, err = _run(capsys, "-s", SRC, "-t", TGT, "-a", PRED_A, "--label", "a", "--label", "b")
    assert rc == 2 and "2 --label for 1 -a files" in err
