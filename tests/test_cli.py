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


# --- issue 12 item 14: one set of conventions for every subcommand -------------------------

import argparse  # noqa: E402
import sys  # noqa: E402

from aligners import __version__  # noqa: E402
from aligners.cli import COMMANDS, _subparsers, build_parser  # noqa: E402
from aligners.errors import AlignersInputError  # noqa: E402

HYDRA_COMMANDS = ("train", "evaluate-run")  # their options are Hydra overrides


def _leaf_parsers():
    """(name, parser) of every leaf subcommand (`reorder extract` etc.)."""
    out = []
    for name, p in _subparsers(build_parser()).items():
        nested = _subparsers(p)
        out += [(f"{name} {k}", q) for k, q in nested.items()] if nested else [(name, p)]
    return out


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"aligners {__version__}"


def test_every_option_has_help_and_shows_its_default():
    leaves = _leaf_parsers()
    assert {n.split()[0] for n, _ in leaves} == set(COMMANDS)
    for name, p in leaves:
        text = p.format_help()
        for action in p._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings} has no help"
            if action.default not in (None, False, argparse.SUPPRESS):
                assert f"default: {action.default}" in text or "default" in action.help, (
                    f"{name} {action.option_strings}: default {action.default!r} not shown")


def test_quiet_on_every_command():
    for name, p in _leaf_parsers():
        if name in HYDRA_COMMANDS:
            continue
        assert "--quiet" in p._option_string_actions and "-q" in p._option_string_actions, name


def test_old_progress_aliases_still_parse():
    parser = build_parser()
    assert parser.parse_args(["align", "-i", "x", "--no-progress"]).quiet
    args = parser.parse_args(["reorder", "extract", "-s", "a", "-t", "b", "-a", "c",
                              "--no-progress"])
    assert args.no_progress


def test_same_short_flags_everywhere():
    parser = build_parser()
    assert vars(parser.parse_args(["align", "-s", "S", "-t", "T"]))["source"] == "S"
    a = parser.parse_args(["convert", "-i", "A", "-s", "S", "-t", "T"])
    assert (a.src, a.tgt) == ("S", "T")
    a = parser.parse_args(["evaluate", "--gold", "G", "--test", "P", "-s", "S", "-t", "T"])
    assert (a.src_text, a.tgt_text) == ("S", "T")
    assert parser.parse_args(["monoalign", "--model", "M", "-i", "P"]).input == "P"
    a = parser.parse_args(["reorder", "train", "-s", "S", "-t", "T", "-a", "A", "-o", "O"])
    assert (a.src, a.tgt) == ("S", "T")


@pytest.mark.parametrize("argv,owner", [
    (["align", "-i", "x", "--bogus"], "aligners align"),
    (["symmetrize", "-c", "union", "-i", "a", "-j", "b", "--bogus"], "aligners symmetrize"),
    (["reorder", "extract", "-s", "a", "-t", "b", "-a", "c", "--bogus"],
     "aligners reorder extract"),
])
def test_unknown_option_is_reported_by_its_subcommand(argv, owner, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err == f"{owner}: error: unrecognized arguments: --bogus (see {owner} --help)\n"


def test_error_starts_its_own_line_after_a_progress_bar(monkeypatch, capsys):
    from tqdm import tqdm

    from aligners.commands import symmetrize

    def run(args):
        bar = tqdm(total=10, desc="work", file=sys.stderr)
        bar.update(3)
        raise AlignersInputError("bad thing", path="f.txt", line=3)

    monkeypatch.setattr(symmetrize, "run", run)
    assert main(["symmetrize", "-c", "union", "-i", "a", "-j", "b"]) == 2
    lines = capsys.readouterr().err.split("\n")
    assert "aligners symmetrize: error: f.txt:3: bad thing" in lines


@pytest.fixture
def tiny_bitext(tmp_path):
    p = tmp_path / "pairs.txt"
    p.write_text("a b ||| x y\nb c ||| y z\nc ||| z\n", encoding="utf-8")
    return p


def test_align_prints_one_summary_line_when_not_on_a_tty(tiny_bitext, capsys):
    argv = ["align", "-i", str(tiny_bitext), "--model", "hmm", "--ibm1-iterations", "1",
            "--hmm-iterations", "1"]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert len(out.out.splitlines()) == 3
    err = out.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "aligners align: 3 sentence pairs aligned, model hmm (--model), device ")
    for phase in ("read", "index", "train", "decode", "write"):  # where the time went
        assert f" {phase} " in err[0], err[0]
    peak = float(err[0].split("; peak memory: host ")[1].split(" GB")[0])  # and the memory
    assert 0.05 < peak < 64, err[0]
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""
