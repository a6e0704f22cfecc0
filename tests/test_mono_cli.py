"""`aligners monoalign` input handling: every bad input is a one-line AlignersInputError
(exit 2); BOM, CRLF and lone CR do not change tokens or line numbering."""

from pathlib import Path

import pytest
import torch

from aligners.cli import main
from aligners.commands.monoalign import _read
from aligners.models.semicrf import PhraseCRFAligner
from aligners.training.monolingual import save_model

LINES = ["he passed away ||| he died", "the cat sat ||| a cat is sitting"]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    m = PhraseCRFAligner(max_src_len=2, max_tgt_len=2)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    path = tmp_path_factory.mktemp("model") / "m.safetensors"
    save_model(m, path, kind="phrase", extra={"direction": "s2t"})
    return path


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


@pytest.mark.parametrize("suffix", [".json", ".safetensors"])
def test_missing_model_file(tmp_path, model_path, capsys, suffix):
    f = tmp_path / "in.txt"
    f.write_text(LINES[0] + "\n", encoding="utf-8")
    m = tmp_path / "m.safetensors"
    other = ".safetensors" if suffix == ".json" else ".json"
    m.with_suffix(other).write_bytes(model_path.with_suffix(other).read_bytes())
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m.with_suffix(suffix)), "not found")


def test_corrupt_model_files(tmp_path, model_path, capsys):
    f = tmp_path / "in.txt"
    f.write_text(LINES[0] + "\n", encoding="utf-8")
    m = tmp_path / "m.safetensors"
    m.write_bytes(b"not safetensors")
    m.with_suffix(".json").write_bytes(model_path.with_suffix(".json").read_bytes())
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m), "cannot load weights")
    m.write_bytes(model_path.read_bytes())
    m.with_suffix(".json").write_text("{\"kind\": \"phrase\"", encoding="utf-8")
    rc, _, err = _run(capsys, "--model", m, "--input", f)
    _one_line_error(rc, err, str(m.with_suffix(".json")), "bad model config")


def test_bad_lines_name_file_and_line(tmp_path, model_path, capsys):
    for text, line in [(LINES[0] + "\nno separator here\n", 2),
                       (LINES[0] + "\n ||| target only\n", 2),
                       ("a ||| b ||| c\n", 1)]:
        f = tmp_path / "in.txt"
        f.write_text(text, encoding="utf-8")
        rc, _, err = _run(capsys, "--model", model_path, "--input", f)
        _one_line_error(rc, err, f"{f}:{line}")


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
