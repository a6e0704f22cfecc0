"""`aligners evaluate` / `aligners symmetrize` end to end on shipped data and tiny files."""

import json

import pytest

from aligners.cli import main
from tests.conftest import shared_path

HANSARDS = ("data", "hansards-enfr-naacl2003", "test")
SYM = ("oracles", "symmetrize")


def _run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_evaluate_gold_against_itself(capsys):
    gold = shared_path(*HANSARDS, "test.wa.nonullalign")
    rc, out, _ = _run(capsys, "evaluate", "--gold", str(gold), "--test", str(gold), "--json")
    assert rc == 0
    r = json.loads(out)
    assert r["pairs"] == 447
    assert r["micro"]["aer"] == 0.0 and r["micro"]["f1"] == 1.0
    assert r["counts"]["sure"] == 4038 and r["counts"]["predicted"] == 4038 + 13400


def test_evaluate_atools_gdfa_on_hansards(capsys):
    # independent computation (Och & Ney AER over the 447 pairs, English source): 0.0805
    gold = shared_path(*HANSARDS, "test.wa.nonullalign")
    test = shared_path(*SYM, "eflomal.enfr.grow-diag-final-and")
    rc, out, _ = _run(capsys, "evaluate", "--gold", str(gold), "--test", str(test), "--json")
    assert rc == 0
    r = json.loads(out)
    assert r["micro"]["aer"] == pytest.approx(0.0805, abs=0.0005)
    assert r["counts"] == {"predicted": 6455, "sure": 4038, "hit_sure": 3785, "hit_possible": 5863}
    rc, text, _ = _run(capsys, "evaluate", "--gold", str(gold), "--test", str(test))
    assert "AER 0.0805 (micro)" in text and "P%" in text


def test_evaluate_with_texts_adds_identity_breakdown(capsys):
    root = shared_path(*HANSARDS)
    test = shared_path(*SYM, "eflomal.enfr.grow-diag-final-and")
    rc, out, _ = _run(
        capsys, "evaluate", "--gold", str(root / "test.wa.nonullalign"), "--test", str(test),
        "--src-text", str(root / "test.e"), "--tgt-text", str(root / "test.f"), "--json",
    )
    assert rc == 0
    r = json.loads(out)
    assert set(r["breakdown"]) == {"identical", "non-identical", "token", "phrase"}
    assert r["micro"]["aer"] == pytest.approx(0.0805, abs=0.0005)  # texts change nothing else


def test_evaluate_tiny_pharaoh_files(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    test = tmp_path / "test.txt"
    gold.write_text("0-0 1-1\n0-0\n")
    test.write_text("0-0 2-1\n\n")
    rc, out, _ = _run(capsys, "evaluate", "--gold", str(gold), "--test", str(test), "--json")
    assert rc == 0
    r = json.loads(out)
    # |A| = 2, |S| = 3, hits = 1 -> P = 1/2, R = 1/3, AER = 1 - 2/5
    assert r["micro"]["precision"] == pytest.approx(0.5)
    assert r["micro"]["recall"] == pytest.approx(1 / 3)
    assert r["micro"]["aer"] == pytest.approx(0.6)


def test_evaluate_line_count_mismatch_is_an_input_error(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    test = tmp_path / "test.txt"
    gold.write_text("0-0\n0-0\n")
    test.write_text("0-0\n")
    rc, _, err = _run(capsys, "evaluate", "--gold", str(gold), "--test", str(test))
    assert rc == 2
    assert "has 2 sentence pairs" in err and "has 1" in err


def test_symmetrize_cli_matches_atools(tmp_path, capsys):
    root = shared_path(*SYM)
    out = tmp_path / "gdfa.txt"
    rc, _, _ = _run(
        capsys, "symmetrize", "-c", "grow-diag-final-and", "-i", str(root / "fastalign.enfr.fwd"),
        "-j", str(root / "fastalign.enfr.rev"), "-o", str(out),
    )
    assert rc == 0
    got = out.read_text().splitlines()
    want = (root / "fastalign.enfr.grow-diag-final-and").read_text().splitlines()
    assert [set(g.split()) for g in got] == [set(w.split()) for w in want]


def test_symmetrize_cli_errors(tmp_path, capsys):
    fwd = tmp_path / "f"
    rev = tmp_path / "r"
    fwd.write_text("0-0\n1-1\n")
    rev.write_text("0-0\n")
    rc, _, err = _run(capsys, "symmetrize", "-c", "union", "-i", str(fwd), "-j", str(rev))
    assert rc == 2 and "has 2 lines" in err
    rev.write_text("0-0\n1_1\n")
    rc, _, err = _run(capsys, "symmetrize", "-c", "union", "-i", str(fwd), "-j", str(rev))
    assert rc == 2 and f"{rev}:2" in err
    with pytest.raises(SystemExit):
        main(["symmetrize", "-c", "grow", "-i", str(fwd), "-j", str(rev)])


def test_symmetrize_cli_reads_posteriors_and_crlf(tmp_path, capsys):
    fwd = tmp_path / "f"
    rev = tmp_path / "r"
    fwd.write_bytes(b"0-0:0.9 1-1:0.8\r\n\r\n2-2 0-0\n")
    rev.write_bytes(b"0-0 1-2\r\n0-0\n0-0  2-2\n")
    rc, out, _ = _run(capsys, "symmetrize", "-c", "union", "-i", str(fwd), "-j", str(rev))
    assert rc == 0
    assert out.splitlines() == ["0-0 1-1 1-2", "0-0", "0-0 2-2"]


def test_evaluate_out_of_range_links_error_or_lenient(tmp_path, capsys):
    (tmp_path / "s").write_text("a b\nc\n")
    (tmp_path / "t").write_text("a b\nc\n")
    (tmp_path / "gold").write_text("0-0 1-1\n0-0\n")
    (tmp_path / "test").write_text("0-0 1-1 1-2\n0-0\n")  # 1-2: target has 2 words
    argv = ["evaluate", "--gold", str(tmp_path / "gold"), "--test", str(tmp_path / "test"),
            "--src-text", str(tmp_path / "s"), "--tgt-text", str(tmp_path / "t"), "--json"]
    rc, _, err = _run(capsys, *argv)
    assert rc == 2 and f"{tmp_path / 'test'}:1" in err
    rc, out, err = _run(capsys, *argv, "--lenient")
    assert rc == 0 and "warning" in err
    r = json.loads(out)
    assert r["micro"]["aer"] == 0.0 and r["counts"]["predicted"] == 3
    assert r["breakdown"]["identical"]["counts"]["sure"] == 3


def test_evaluate_registry_dataset(capsys):
    shared_path(*HANSARDS)
    test = shared_path(*SYM, "eflomal.enfr.grow-diag-final-and")
    rc, out, _ = _run(capsys, "evaluate", "--dataset", "hansards-enfr", "--test", str(test),
                      "--json")
    assert rc == 0
    r = json.loads(out)
    assert r["micro"]["aer"] == pytest.approx(0.0805, abs=0.0005)
    assert "identical" in r["breakdown"]
    rc, _, err = _run(capsys, "evaluate", "--dataset", "no-such-set", "--test", str(test))
    assert rc == 2 and "unknown dataset" in err
