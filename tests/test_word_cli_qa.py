"""Regressions for the QA findings on `aligners align`: -o with -f/-r, one-line errors instead
of tracebacks, argparse-level rejection of bad settings, `<s snum=N>`-wrapped input."""

import pytest
from test_word_cli import FAST, links, write_corpus

from aligners.cli import main
from aligners.symmetrize import symmetrize


def test_output_with_forward_and_reverse_writes_symmetrized_links(tmp_path):
    s, t, src, _ = write_corpus(tmp_path)
    f, r, o = tmp_path / "f", tmp_path / "r", tmp_path / "o"
    assert main(["align", "-s", str(s), "-t", str(t), "-f", str(f), "-r", str(r), "-o", str(o),
                 "--decoding", "viterbi", *FAST]) == 0
    assert o.is_file()
    fwd, rev, sym = links(f), links(r), links(o)
    assert len(sym) == len(src)
    # the default heuristic for Viterbi decoding is grow-diag-final-and of the two directions
    for n, (a, b, c) in enumerate(zip(fwd, rev, sym)):
        want = symmetrize(sorted(a), sorted(b), "grow-diag-final-and")
        assert set(map(tuple, want)) == c, n


def _err(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("flag", ["-o", "-f", "-r"])
def test_unwritable_output_path_is_one_line_error(tmp_path, capsys, flag):
    s, t, _, _ = write_corpus(tmp_path, n=5)
    bad = str(tmp_path / "no" / "such" / "dir" / "out")
    assert main(["align", "-s", str(s), "-t", str(t), flag, bad, *FAST]) == 2
    assert flag in _err(capsys)


def test_output_path_that_is_a_directory_is_one_line_error(tmp_path, capsys):
    s, t, _, _ = write_corpus(tmp_path, n=5)
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(tmp_path), *FAST]) == 2
    assert "is a folder" in _err(capsys)


def test_save_model_to_unwritable_dir_is_one_line_error(tmp_path, capsys):
    # /proc refuses new directories even to root (so the test cannot pass by permissions)
    s, t, _, _ = write_corpus(tmp_path, n=5)
    assert main(["align", "-s", str(s), "-t", str(t), "--save-model",
                 "/proc/aligners-no-such-dir/model", "-o", str(tmp_path / "o"), *FAST]) == 2
    assert "--save-model" in _err(capsys)


def test_save_model_under_a_file_is_one_line_error(tmp_path, capsys):
    s, t, _, _ = write_corpus(tmp_path, n=5)
    assert main(["align", "-s", str(s), "-t", str(t), "--save-model", str(s / "m"),
                 *FAST]) == 2
    assert "--save-model" in _err(capsys)


@pytest.mark.parametrize("damage", ["json", "fields", "tensors"])
def test_load_model_with_corrupt_files_is_one_line_error(tmp_path, capsys, damage):
    s, t, _, _ = write_corpus(tmp_path, n=20)
    model = tmp_path / "model"
    assert main(["align", "-s", str(s), "-t", str(t), "--save-model", str(model),
                 "-o", str(tmp_path / "o"), *FAST]) == 0
    capsys.readouterr()
    if damage == "json":
        (model / "config.json").write_text('{"format": "aligners/1", ',
                                           encoding="utf-8")
    elif damage == "fields":
        (model / "config.json").write_text('{"format": "aligners/1", "kind": "word-aligner"}',
                                           encoding="utf-8")
    else:
        (model / "model.safetensors").write_bytes(b"\x00garbage")
    assert main(["align", "-s", str(s), "-t", str(t), "--load-model", str(model),
                 "--quiet"]) == 2
    assert "--load-model" in _err(capsys)


@pytest.mark.parametrize("setting", [
    ["--threshold", "2"], ["--threshold", "nan"], ["--threshold", "-0.1"],
    ["--p0", "-0.5"], ["--p0", "1.5"], ["--p0", "1"], ["--p0", "inf"],
    ["--ibm1-iterations", "-1"], ["--hmm-iterations", "-3"], ["--max-jump", "0"],
    ["--alpha", "-1"], ["--threads", "0"], ["--batch-cells", "0"], ["--hmm-iterations", "x"],
])
def test_bad_settings_are_one_line_errors(tmp_path, capsys, setting):
    """Checked by the option's rule (its dataclass field), or by argparse for what is not a
    number: one line naming the flag, exit 2."""
    s, t, _, _ = write_corpus(tmp_path, n=5)
    try:
        status = main(["align", "-s", str(s), "-t", str(t), *FAST, *setting])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert setting[0] in err


def test_boundary_settings_are_accepted(tmp_path):
    s, t, _, _ = write_corpus(tmp_path, n=10)
    o = tmp_path / "o"
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(o), "--model", "hmm", "--p0",
                 "0", "--threshold",
                 "1", "--ibm1-iterations", "0", "--hmm-iterations", "1", "--quiet",
                 "--decoding", "posterior"]) == 0
    assert len(links(o)) == 10


def _wrap(lines, start=1):
    return "".join(f"<s snum={n:04d}> {x}  </s>\n" for n, x in enumerate(lines, start))


def test_snum_wrapped_files_are_read_as_their_tokens(tmp_path):
    s, t, src, tgt = write_corpus(tmp_path, n=40)
    plain = tmp_path / "plain"
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(plain), *FAST]) == 0
    ws, wt = tmp_path / "w.e", tmp_path / "w.f"
    ws.write_text(_wrap(" ".join(x) for x in src), encoding="utf-8")
    wt.write_text(_wrap(" ".join(x) for x in tgt), encoding="utf-8")
    wrapped = tmp_path / "wrapped"
    assert main(["align", "-s", str(ws), "-t", str(wt), "-o", str(wrapped), *FAST]) == 0
    assert wrapped.read_text() == plain.read_text()  # the wrapper is not read as words


def test_snum_mismatches_are_one_line_errors(tmp_path, capsys):
    s, t, src, tgt = write_corpus(tmp_path, n=6)
    ws, wt = tmp_path / "w.e", tmp_path / "w.f"
    ws.write_text(_wrap(" ".join(x) for x in src), encoding="utf-8")
    assert main(["align", "-s", str(ws), "-t", str(t), *FAST]) == 2  # one side wrapped
    assert "wrapped" in _err(capsys)
    wt.write_text(_wrap((" ".join(x) for x in tgt), start=2), encoding="utf-8")
    assert main(["align", "-s", str(ws), "-t", str(wt), *FAST]) == 2  # numbers differ
    assert "snum" in _err(capsys)
    text = _wrap(" ".join(x) for x in tgt).splitlines()
    text[3] = "t1 t2"
    wt.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert main(["align", "-s", str(ws), "-t", str(wt), *FAST]) == 2  # wrapper missing
    assert ":4:" in _err(capsys)
    # unwrapped text with a wrapped line further down (the first line decides the format)
    plain = [" ".join(x) for x in src]
    plain[2] = _wrap([plain[2]]).strip()
    ws.write_text("\n".join(plain) + "\n", encoding="utf-8")
    assert main(["align", "-s", str(ws), "-t", str(t), *FAST]) == 2
    err = _err(capsys)
    assert ":3:" in err and "unwrapped" in err


def test_unwritable_save_model_is_rejected_before_reading_or_training(tmp_path, capsys):
    # /proc passes os.access for root; the check must try for real, and before any input
    # is read (the input file here does not even exist)
    assert main(["align", "-i", str(tmp_path / "missing.txt"), "--save-model", "/proc/x",
                 "--quiet"]) == 2
    err = _err(capsys)
    assert "--save-model" in err and "missing.txt" not in err
