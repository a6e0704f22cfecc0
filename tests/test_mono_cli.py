"""`aligners monoalign` input handling: every bad input is a one-line AlignersInputError
(exit 2); BOM, CRLF and lone CR do not change tokens or line numbering; a t2s model flips
links and blocks; the command (and `aligners --help`) import no Lightning / no torch."""

import argparse
from pathlib import Path

import pytest
import torch

from aligners.cli import main
from aligners.commands.monoalign import _read_pairs
from aligners.models.mono.aligner import MonoAligner
from aligners.models.mono.semicrf import PhraseCRFAligner

LINES = ["he passed away ||| he died", "the cat sat ||| a cat is sitting"]


def _random_model(seed):
    torch.manual_seed(seed)
    m = PhraseCRFAligner(max_src_len=2, max_tgt_len=2)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    return m


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("model") / "model"
    return MonoAligner({"s2t": _random_model(0)}, kind="phrase").save(folder)


def _run(capsys, *argv):
    rc = main(["monoalign", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc, err, *needles):
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err


def test_good_input_aligns_one_line_per_pair(tmp_path, model_path, capsys):
    f = tmp_path / "in.txt"
    f.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    rc, out, err = _run(capsys, "--model", model_path, "--input", f)
    assert rc == 0 and len(out.splitlines()) == 2
    # not a terminal: one summary line (issue 12 item 14); --quiet: nothing
    assert err.startswith("aligners monoalign: 2 sentence pairs aligned in ") and err.count(
        "\n") == 1, err
    rc, out, err = _run(capsys, "--model", model_path, "--input", f, "--quiet")
    assert rc == 0 and err == "" and len(out.splitlines()) == 2


def test_missing_input_file(tmp_path, model_path, capsys):
    missing = tmp_path / "nope.txt"
    rc, _, err = _run(capsys, "--model", model_path, "--input", missing)
    _one_line_error(rc, err, str(missing), "file not found")


def test_non_utf8_bytes(tmp_path, model_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_bytes(LINES[0].encode() + b"\n caf\xe9 ||| cafe\n")
    rc, _, err = _run(capsys, "--model", model_path, "--input", f)
    _one_line_error(rc, err, f"{f}:2", "UTF-8")


@pytest.mark.parametrize("missing", ["config.json", "model.safetensors", "folder"])
def test_missing_model_parts(tmp_path, model_path, capsys, missing):
    import shutil
    f = tmp_path / "in.txt"
    f.write_text(LINES[0] + "\n", encoding="utf-8")
    m = tmp_path / "m"
    shutil.copytree(model_path, m)
    if missing == "folder":
        shutil.rmtree(m)
    else:
        (m / missing).unlink()
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m))


def test_corrupt_model_files(tmp_path, model_path, capsys):
    import shutil
    f = tmp_path / "in.txt"
    f.write_text(LINES[0] + "\n", encoding="utf-8")
    m = tmp_path / "m"
    shutil.copytree(model_path, m)
    (m / "model.safetensors").write_bytes(b"not safetensors")
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m / "model.safetensors"), "unreadable safetensors")
    shutil.copy(model_path / "model.safetensors", m / "model.safetensors")
    (m / "config.json").write_text("{\"kind\": \"phrase\"", encoding="utf-8")
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m / "config.json"), "not valid JSON")
    cfg = (model_path / "config.json").read_text().replace('"max_tgt_len": 2',
                                                            '"max_tgt_len": 3')
    (m / "config.json").write_text(cfg, encoding="utf-8")
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m))


@pytest.mark.parametrize("argv,needle", [(["--batch-size", "0"],
                                          "--batch-size must be an integer >= 1; got 0"),
                                         (["--threads", "-2"],
                                          "--threads must be an integer >= 1; got -2"),
                                         (["--direction", "t2s"], "no 't2s' direction")])
def test_bad_options_one_line(tmp_path, model_path, capsys, argv, needle):
    f = tmp_path / "in.txt"
    f.write_text(LINES[0] + "\n", encoding="utf-8")
    rc, _, err = _run(capsys, "--model", model_path, "--input", f, *argv)
    _one_line_error(rc, err, needle)


def test_t2s_model_flips_links_and_blocks(tmp_path, capsys):
    """A t2s-only model: monoalign prints links AND blocks in source-target order, equal to
    the s2t output of the same CRF on the swapped pair, flipped by hand."""
    crf = _random_model(3)
    t2s = MonoAligner({"t2s": crf}, kind="phrase").save(tmp_path / "t2s")
    s2t = MonoAligner({"s2t": crf}, kind="phrase").save(tmp_path / "s2t")
    f, swapped = tmp_path / "in.txt", tmp_path / "swapped.txt"
    f.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    swapped.write_text("\n".join(" ||| ".join(reversed(x.split(" ||| "))) for x in LINES)
                       + "\n", encoding="utf-8")
    rc, out, _ = _run(capsys, "--model", t2s, "--input", f, "--blocks")
    rc2, out_sw, _ = _run(capsys, "--model", s2t, "--input", swapped, "--blocks")
    assert rc == rc2 == 0
    blocks_seen = 0
    for line, line_sw in zip(out.splitlines(), out_sw.splitlines()):
        links, blocks = line.split(" ||| ")
        links_sw, blocks_sw = line_sw.split(" ||| ")
        flip_l = sorted((int(b), int(a)) for a, b in (x.split("-") for x in links_sw.split()))
        assert [tuple(map(int, x.split("-"))) for x in links.split()] == flip_l
        flip_b = sorted(tuple(map(int, (t + ":" + s).replace("-", ":").split(":")))
                        for s, t in (x.split("-") for x in blocks_sw.split()))
        assert sorted(tuple(map(int, x.replace("-", ":").split(":")))
                      for x in blocks.split()) == flip_b
        blocks_seen += len(flip_b)
    assert blocks_seen > 0


def test_monoalign_and_help_import_no_lightning(tmp_path, model_path):
    """A real monoalign run imports no Lightning and no aligners.training; `aligners --help`
    imports no torch at all (it must start fast)."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    f = tmp_path / "in.txt"
    f.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    probe = ("import sys, runpy\n"
             "sys.argv = ['aligners'] + sys.argv[1:]\n"
             "try:\n    runpy.run_module('aligners', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\n"
             "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pytorch_lightning', 'lightning', 'lightning_fabric', 'hydra') "
             "or m.startswith('aligners.training'))\n"
             "print('MODULES', 'torch' in sys.modules, bad, file=sys.stderr)\n")
    def modules(*argv):
        r = subprocess.run([sys.executable, "-c", probe, *map(str, argv)], cwd=root,
                           capture_output=True, text=True, timeout=300)
        line = [x for x in r.stderr.splitlines() if x.startswith("MODULES")][-1]
        return r.stdout, line
    out, line = modules("monoalign", "--model", model_path, "--input", f)
    assert len(out.splitlines()) == 2 and line == "MODULES True []", line
    _, line = modules("monoalign", "--help")
    assert line.endswith("[]"), line
    _, line = modules("--help")
    assert line == "MODULES False []", line


def test_bad_lines_name_file_and_line(tmp_path, model_path, capsys):
    for text, line in [(LINES[0] + "\nno separator here\n", 2),
                       (LINES[0] + "\n ||| target only\n", 2),
                       ("a ||| b ||| c\n", 1)]:
        f = tmp_path / "in.txt"
        f.write_text(text, encoding="utf-8")
        rc, _, err = _run(capsys, "--model", model_path, "--input", f)
        _one_line_error(rc, err, f"{f}:{line}")


def _read(path: str):
    return _read_pairs(argparse.Namespace(input=path, source=None, target=None))


def test_bom_crlf_and_lone_cr(tmp_path, model_path, capsys):
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + ("\r\n".join(LINES) + "\r\n").encode())
    assert _read(str(bom)) == _read(str(plain))
    assert _read(str(bom))[0].src[0] == "he"
    outs = [_run(capsys, "--model", model_path, "--input", f)[1] for f in (plain, bom)]
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == 2
    # a lone CR is whitespace inside a line, never a line break: pairs stay in place
    cr = tmp_path / "cr.txt"
    cr.write_bytes(b"he passed\raway ||| he died\nthe cat sat ||| a cat is sitting\n")
    pairs = _read(str(cr))
    assert len(pairs) == 2 and pairs[0].src == ("he", "passed", "away")
    assert pairs[1].tgt == ("a", "cat", "is", "sitting")


def test_two_file_input_is_the_same_as_one_file(tmp_path, model_path, capsys):
    """`-s SRC -t TGT` (the short flags of `aligners align`) == `-i 'src ||| tgt'`."""
    one = tmp_path / "in.txt"
    one.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (tmp_path / "s").write_text("".join(x.split(" ||| ")[0] + "\n" for x in LINES))
    (tmp_path / "t").write_text("".join(x.split(" ||| ")[1] + "\n" for x in LINES))
    rc1, out1, _ = _run(capsys, "--model", model_path, "-i", one, "--blocks", "-q")
    rc2, out2, _ = _run(capsys, "--model", model_path, "-s", tmp_path / "s", "-t",
                        tmp_path / "t", "--blocks", "-q")
    assert rc1 == rc2 == 0 and out1 == out2 and len(out2.splitlines()) == 2
    for argv, needle in ((["-s", tmp_path / "s"], "both -s"),
                         (["-i", one, "-s", tmp_path / "s", "-t", tmp_path / "t"], "not both")):
        rc, _, err = _run(capsys, "--model", model_path, *argv)
        assert rc == 2 and needle in err and err.count("\n") == 1, err
    (tmp_path / "t").write_text("he died\n\n")
    rc, _, err = _run(capsys, "--model", model_path, "-s", tmp_path / "s", "-t", tmp_path / "t")
    assert rc == 2 and f"{tmp_path / 't'}:2" in err, err
