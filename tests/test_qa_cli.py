"""QA regressions: bad input to the CLI ends in one `aligners CMD: error: ...` line, exit 2."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from aligners.cli import main


def _fail(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"aligners {argv[0]}: error: "), err
    return err[0]


@pytest.fixture
def links(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("0-0 1-1\n0-0\n")
    return p


def test_truncated_gzip_is_input_error(tmp_path, links, capsys):
    full = gzip.compress(b"0-0\n0-0\n" * 1000)
    bad = tmp_path / "trunc.gz"
    bad.write_bytes(full[: len(full) // 2])
    msg = _fail(["symmetrize", "-c", "union", "-i", str(links), "-j", str(bad)], capsys)
    assert "trunc.gz" in msg and "gzip" in msg


def test_not_gzip_is_input_error(tmp_path, links, capsys):
    bad = tmp_path / "plain.gz"
    bad.write_text("0-0\n0-0\n")
    msg = _fail(["symmetrize", "-c", "union", "-i", str(links), "-j", str(bad)], capsys)
    assert "plain.gz:1" in msg


def test_directory_input_is_input_error(tmp_path, links, capsys):
    msg = _fail(["symmetrize", "-c", "union", "-i", str(tmp_path), "-j", str(links)], capsys)
    assert "directory" in msg


def test_unwritable_output_is_input_error(tmp_path, links, capsys):
    out = tmp_path / "no" / "such" / "dir.txt"
    msg = _fail(
        ["symmetrize", "-c", "union", "-i", str(links), "-j", str(links), "-o", str(out)], capsys
    )
    assert "dir.txt" in msg and "cannot write" in msg


@pytest.fixture
def bitext(tmp_path):
    (tmp_path / "s").write_text("a b c\nd e\n")
    (tmp_path / "t").write_text("x y z\nu v\n")
    (tmp_path / "a").write_text("0-0 1-2 2-1\n0-0 1-1\n")
    return tmp_path


def test_reorder_out_of_range_names_file_line_and_lenient_drops(bitext, capsys):
    bad = bitext / "bad.a"
    bad.write_text("0-0 1-2 2-1\n0-0 1-5\n")
    argv = ["reorder", "extract", "-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a", str(bad)]
    msg = _fail([*argv, "--no-progress"], capsys)
    assert "bad.a:2: link (1, 5)" in msg
    assert main([*argv, "--no-progress", "--lenient"]) == 0
    cap = capsys.readouterr()
    assert "dropped 1 link(s)" in cap.err
    good = main(["reorder", "extract", *argv[2:6], "-a", str(bitext / "a"), "--no-progress"])
    assert good == 0
    # the dropped link only changes pair 2, so pair 1's phrase pairs are identical
    lines = capsys.readouterr().out.splitlines()
    assert [x for x in lines if x.startswith(("a", "b", "c"))] == [
        x for x in cap.out.splitlines() if x.startswith(("a", "b", "c"))
    ]


def test_reorder_reads_alignment_from_stdin(bitext, capsys, monkeypatch):
    import io
    import sys

    argv = ["reorder", "extract", "-s", str(bitext / "s"), "-t", str(bitext / "t")]
    assert main([*argv, "-a", str(bitext / "a"), "--no-progress"]) == 0
    want = capsys.readouterr().out
    data = (bitext / "a").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main([*argv, "-a", "-", "--no-progress"]) == 0
    assert capsys.readouterr().out == want and want


def test_reorder_predict_bad_model_and_empty_corpus(bitext, capsys):
    corpus = ["-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a", str(bitext / "a")]
    model = bitext / "m"
    assert (
        main(["reorder", "train", *corpus, "--no-progress", "--model", "nb", "-o", str(model)]) == 0
    )
    empty = bitext / "empty"
    empty.write_text("")
    capsys.readouterr()
    assert (
        main(
            [
                "reorder",
                "predict",
                *["-s", str(empty), "-t", str(empty), "-a", str(empty)],
                "--no-progress",
                "-m",
                str(model),
            ]
        )
        == 0
    )
    assert "nan" not in capsys.readouterr().err.lower()
    (model / "features.json").unlink()
    assert "features.json" in _fail(
        ["reorder", "predict", *corpus, "--no-progress", "-m", str(model)], capsys
    )
    (model / "config.json").write_text("{")
    assert "config.json" in _fail(
        ["reorder", "predict", *corpus, "--no-progress", "-m", str(model)], capsys
    )


def test_reorder_unwritable_outputs_and_negative_limit(bitext, capsys):
    corpus = ["-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a", str(bitext / "a")]
    blocker = bitext / "file"
    blocker.write_text("")
    _fail(["reorder", "extract", *corpus, "--no-progress", "-o", str(blocker / "x")], capsys)
    _fail(["reorder", "train", *corpus, "--no-progress", "-o", str(blocker / "m")], capsys)
    assert "--limit" in _fail(
        ["reorder", "extract", *corpus, "--no-progress", "--limit", "-1"], capsys
    )


def test_evaluate_both_stdin_is_input_error(capsys):
    assert "stdin" in _fail(["evaluate", "--gold", "-", "--test", "-"], capsys)


def test_sentences_from_stdin_are_read_once(tmp_path, capsys, monkeypatch):
    import io
    import sys

    (tmp_path / "a").write_text("0-0 1-1\n0-0\n")
    (tmp_path / "t").write_text("x y\nz\n")
    for wrapped in (False, True):
        src = b"a b\nc\n" if not wrapped else b"<s snum=1> a b </s>\n<s snum=2> c </s>\n"
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(src)))
        argv = ["convert", "-i", str(tmp_path / "a"), "--src", "-", "--tgt", str(tmp_path / "t")]
        assert main(argv) == 0
        assert capsys.readouterr().out == "0-0 1-1\n0-0\n"
        if wrapped:  # evaluate wants both sides in the same (plain or <s snum>) form
            continue
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(src)))
        a = str(tmp_path / "a")
        argv = [
            "evaluate",
            "--gold",
            a,
            "--test",
            a,
            "--src-text",
            "-",
            "--tgt-text",
            str(tmp_path / "t"),
            "--json",
        ]
        assert main(argv) == 0
        assert '"pairs": 2' in capsys.readouterr().out


def test_out_of_range_message_has_no_none_bound(tmp_path, capsys):
    a3 = tmp_path / "x.a3"
    a3.write_text("# Sentence pair (1)\nx y\nNULL ({ }) a ({ 1 }) b ({ 5 })\n")
    msg = _fail(["convert", "-i", str(a3)], capsys)
    assert "None" not in msg and "2 source words; expected 0 <= i < 2" in msg


def test_reorder_predict_lowercases_as_the_model_was_trained(bitext, capsys):
    (bitext / "s").write_text("A b C\nD e\n")
    corpus = ["-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a", str(bitext / "a")]
    model = bitext / "lex"
    argv = ["reorder", "train", *corpus, "--no-progress", "--model", "lexical", "--lowercase"]
    assert main([*argv, "-o", str(model)]) == 0
    outs = []
    for flag in ([], ["--lowercase"]):
        capsys.readouterr()
        assert main(["reorder", "predict", *corpus, "--no-progress", "-m", str(model), *flag]) == 0
        outs.append(capsys.readouterr())
    assert (
        outs[0].out == outs[1].out
        and "error vs extracted backward orientation 0.00%" in outs[0].err
    )


def test_evaluate_empty_files_is_input_error(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert "no sentence pairs" in _fail(
        ["evaluate", "--gold", str(empty), "--test", str(empty)], capsys
    )


def test_reorder_output_over_an_input_is_refused_and_input_kept(bitext, capsys):
    a = bitext / "a"
    before = a.read_text()
    corpus = ["-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a", str(a)]
    assert "also an input" in _fail(["reorder", "extract", *corpus, "-o", str(a)], capsys)
    assert a.read_text() == before


def test_baseline_on_a_dataset_without_alignments_is_input_error(tmp_path):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf, open_dict

    from aligners.errors import AlignersInputError
    from aligners.training.baseline import train
    from tests.conftest import shared_path

    shared_path("data", "msrp-paraphrase")
    configs = str(Path(__file__).resolve().parents[1] / "configs")
    with initialize_config_dir(config_dir=configs, version_base="1.3"):
        cfg = compose(config_name="train", overrides=["experiment=diagonal_baseline",
                                                      "data.name=msrp"])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path)
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    with pytest.raises(AlignersInputError, match="no gold alignments"):
        train(cfg)


@pytest.mark.parametrize("option", [
    ["--eps", "-1"], ["--sigma2", "-1"], ["--lr", "-1"], ["--epochs", "0"], ["--max-iter", "-3"],
    ["--min-count", "-3"], ["--mi-remove", "5"], ["--alpha", "0.5"], ["--max-length", "0"],
])
def test_reorder_train_absurd_options_exit_2_with_one_line(bitext, capsys, option):
    model = bitext / "model"
    corpus = ["-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a", str(bitext / "a")]
    model_kind = {"--eps": "dual", "--max-iter": "dual", "--sigma2": "primal", "--lr": "primal",
                  "--epochs": "primal"}.get(option[0], "nb")
    msg = _fail(["reorder", "train", *corpus, "--no-progress", "--model", model_kind, *option,
                 "-o", str(model)], capsys)
    assert option[0] in msg and "must be" in msg
    assert not model.exists()  # checked before any work: no model folder at all


def test_reorder_extract_error_leaves_no_partial_output(bitext, capsys):
    bad = bitext / "bad.a"
    bad.write_text("0-0 1-2 2-1\n0-9\n")  # line 2 is out of range: fails after line 1
    out = bitext / "out.gz"
    _fail(["reorder", "extract", "-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a",
           str(bad), "--no-progress", "-o", str(out)], capsys)
    assert not out.exists()
    assert sorted(p.name for p in bitext.iterdir()) == ["a", "bad.a", "s", "t"]  # no temp file
    out.write_bytes(b"old")  # an existing output is kept intact on error
    _fail(["reorder", "extract", "-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a",
           str(bad), "--no-progress", "-o", str(out)], capsys)
    assert out.read_bytes() == b"old"


def test_reorder_train_error_leaves_no_model_folder(bitext, capsys):
    empty = bitext / "empty.a"
    empty.write_text("\n\n")  # no links: nothing to train on
    model = bitext / "m"
    _fail(["reorder", "train", "-s", str(bitext / "s"), "-t", str(bitext / "t"), "-a",
           str(empty), "--no-progress", "-o", str(model)], capsys)
    assert not model.exists()
    assert not [p for p in bitext.iterdir() if p.name.startswith(".")]


# --- issue 12 item 15: no noise in a normal run ----------------------------------------------


def test_quiet_runs_silences_exactly_the_listed_messages():
    import logging
    import warnings

    from aligners.training.quiet import LOGGERS, quiet_runs

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_runs()
        warnings.warn("`LightningModule.configure_optimizers` returned `None`, this fit will "
                      "run with no optimizer", UserWarning, stacklevel=1)
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...",
                      DeprecationWarning, stacklevel=1)
        warnings.warn("a real problem", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a real problem"]
    assert all(logging.getLogger(n).level == logging.WARNING for n in LOGGERS)


@pytest.mark.slow
def test_train_py_word_run_has_an_empty_stderr(tmp_path):
    """`python train.py` (the default word job, on 300 pairs) prints no tips, no
    configure_optimizers note, no deprecation or torch UserWarnings: stderr is empty."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, str(root / "train.py"), "data.train_limit=300",
                          "trainer.log_every_n_steps=1", f"hydra.run.dir={tmp_path / 'run'}"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "AER" in res.stdout
    assert res.stderr.strip() == "", res.stderr
