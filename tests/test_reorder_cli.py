"""`aligners reorder extract|train|predict` end to end on tiny files."""

import gzip
import json

import pytest

from aligners.cli import main


@pytest.fixture
def corpus(tmp_path):
    src = ["the house", "a b c", "the red house", "the house"] * 5
    tgt = ["la maison", "x y", "la maison rouge", "la maison"] * 5
    ali = ["0-0 1-1", "0-0 2-1", "0-0 2-1 1-2", "0-0 1-1"] * 5
    paths = {}
    for name, lines in (("src", src), ("tgt", tgt), ("ali", ali)):
        paths[name] = tmp_path / f"c.{name}"
        paths[name].write_text("\n".join(lines) + "\n")
    with gzip.open(tmp_path / "c.src.gz", "wt") as f:
        f.write("\n".join(src) + "\n")
    paths["src_gz"] = tmp_path / "c.src.gz"
    return paths


def _args(p, src="src"):
    return ["-s", str(p[src]), "-t", str(p["tgt"]), "-a", str(p["ali"]), "--quiet"]


def test_extract_lines_match_moses_format(corpus, tmp_path):
    out = tmp_path / "extract.gz"
    assert main(["reorder", "extract", *_args(corpus, "src_gz"), "--limit", "3",
                 "-o", str(out)]) == 0
    lines = gzip.open(out, "rt").read().splitlines()
    assert lines[:3] == [
        "the ||| la ||| 0-0 ||| mono",
        "the house ||| la maison ||| 0-0 1-1 ||| mono",
        "house ||| maison ||| 0-0 ||| mono",
    ]
    # "a b c ||| x y" with b unaligned: "a ||| x", "a b ||| x", ..., "c ||| y" is other
    assert "c ||| y ||| 0-0 ||| other" in lines
    assert "b c ||| y ||| 1-0 ||| mono" in lines
    assert "red house ||| maison rouge ||| 1-0 0-1 ||| mono" in lines
    assert "red ||| rouge ||| 0-0 ||| swap" in lines
    hier = tmp_path / "hier.txt"
    main(["reorder", "extract", *_args(corpus), "--limit", "3", "--orientation", "hier",
          "--direction", "both", "-o", str(hier)])
    assert hier.read_text().splitlines()[0] == "the ||| la ||| 0-0 ||| mono mono"


@pytest.mark.parametrize("model", ["nb", "primal", "dual", "lexical"])
def test_train_then_predict(corpus, tmp_path, model, capsys):
    mdir = tmp_path / model
    extra = ["--moses-table", str(tmp_path / "table")] if model == "lexical" else []
    assert main(["reorder", "train", *_args(corpus), "--model", model, "--min-count", "1",
                 "-o", str(mdir), *extra]) == 0
    assert (mdir / "model.safetensors").is_file()
    assert json.loads((mdir / "config.json").read_text())["extract"]["orientation"] == "wbe"
    out = tmp_path / "pred.txt"
    assert main(["reorder", "predict", *_args(corpus), "-m", str(mdir), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    ext = tmp_path / "e.txt"
    main(["reorder", "extract", *_args(corpus), "-o", str(ext)])
    assert len(lines) == len(ext.read_text().splitlines())
    first = lines[0].split(" ||| ")
    assert first[:2] == ["the", "la"] and first[2] in ("mono", "swap", "other")
    assert abs(sum(float(v) for v in first[3].split()) - 1) < 1e-3
    assert "error vs extracted backward orientation" in capsys.readouterr().err
    if model == "lexical":
        table = (tmp_path / "table").read_text().splitlines()
        assert table[0].startswith("the ||| la ||| ")
        assert len(table) == len({tuple(x.split(" ||| ")[:2]) for x in lines})


def test_bad_inputs_exit_2(corpus, tmp_path, capsys):
    bad = tmp_path / "bad.ali"
    bad.write_text("0-0 1-1\n0-9\n")
    code = main(["reorder", "extract", "-s", str(corpus["src"]), "-t", str(corpus["tgt"]),
                 "-a", str(bad), "--limit", "2", "--no-progress"])
    assert code == 2
    assert "bad.ali:2: link (0, 9)" in capsys.readouterr().err
    code = main(["reorder", "extract", "-s", str(tmp_path / "nope"), "-t", str(corpus["tgt"]),
                 "-a", str(bad), "--no-progress"])
    assert code == 2
    short = tmp_path / "short.ali"
    short.write_text("0-0 1-1\n")
    assert main(["reorder", "extract", *_args(corpus)[:4], "-a", str(short),
                 "--no-progress"]) == 2
    assert main(["reorder", "predict", *_args(corpus), "-m", str(tmp_path)]) == 2
