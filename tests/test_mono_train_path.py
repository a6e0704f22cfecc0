"""`data.train_path=` / `data.dev_path=`: train the monolingual aligner on one's own annotated
data in each supported format (jacana JSON, MultiMWA TSV, Pharaoh + text); the three give the
same pairs and therefore the same trained weights; bad files are one clear error."""

import json

import pytest

from aligners.data.jacana import read_annotated
from aligners.errors import AlignersInputError
from tests.test_data_gold import write_jacana_json
from tests.test_mono_training import _cfg


def _pairs():
    from aligners.data.datasets import load
    try:
        pairs = load("edbpp", "train")  # sure and possible links
    except AlignersInputError as err:
        pytest.skip(f"shared data missing: {err}")
    return pairs[:10]


def _write_all(pairs, d):
    """The same pairs in the three formats; returns name -> train_path spec."""
    write_jacana_json(pairs, d / "mine.json")
    rows = []
    for n, p in enumerate(pairs):
        al = p.alignment
        sure = " ".join(f"{i}-{j}" for i, j in sorted(al.sure))
        poss = " ".join(f"{i}-{j}" for i, j in sorted(al.possible - al.sure))
        rows.append("\t".join([str(n), " ".join(p.src), "N/A", " ".join(p.tgt), "N/A", "1", "1",
                               sure, poss, ""]))
    (d / "mine.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (d / "mine.src").write_text("".join(" ".join(p.src) + "\n" for p in pairs), encoding="utf-8")
    (d / "mine.tgt").write_text("".join(" ".join(p.tgt) + "\n" for p in pairs), encoding="utf-8")
    links = []
    for p in pairs:
        al = p.alignment
        links.append(" ".join([f"{i}-{j}" for i, j in sorted(al.sure)]
                              + [f"{i}?{j}" for i, j in sorted(al.possible - al.sure)]))
    (d / "mine.links").write_text("\n".join(links) + "\n", encoding="utf-8")
    return {"jacana": str(d / "mine.json"), "multimwa": str(d / "mine.tsv"),
            "pharaoh": [str(d / "mine.src"), str(d / "mine.tgt"), str(d / "mine.links")]}


def test_three_formats_read_the_same_pairs(tmp_path):
    pairs = _pairs()
    assert any(p.alignment.possible != p.alignment.sure for p in pairs)  # P-only links present
    for name, spec in _write_all(pairs, tmp_path).items():
        got = read_annotated(spec)
        assert [(p.src, p.tgt, p.alignment) for p in got] == \
            [(p.src, p.tgt, p.alignment) for p in pairs], name


def test_sure_plus_poss_json_keeps_s_and_p_apart(tmp_path):
    pairs = _pairs()
    f = tmp_path / "x.sure+poss.json"
    write_jacana_json(pairs, f, sure_plus_poss=True)
    assert [p.alignment for p in read_annotated(str(f))] == [p.alignment for p in pairs]


def _override(spec) -> str:
    if isinstance(spec, list):
        return "[" + ",".join(f"'{x}'" for x in spec) + "]"
    return f"'{spec}'"


def test_train_on_each_format_gives_the_same_model(tmp_path):
    from aligners.training.mono import train
    pairs = _pairs()
    specs = _write_all(pairs, tmp_path)
    weights = {}
    for name, spec in specs.items():
        out = tmp_path / f"run_{name}"
        metrics = train(_cfg("train", [
            "experiment=tokencrf_msr06", "training.max_iter=3", "data.test_limit=5",
            f"data.train_path={_override(spec)}", f"data.dev_path={_override(spec)}"], out))
        assert {"test/s2t", "dev/s2t"} <= set(metrics) and metrics["dev/s2t"]["pairs"] == 5
        cfg = json.loads((out / "model" / "config.json").read_text())
        assert cfg["train_pairs"] == len(pairs)
        weights[name] = json.loads((out / "weights.json").read_text())
    assert weights["jacana"] == weights["multimwa"] == weights["pharaoh"]
    assert any(v != 0 for v in weights["jacana"]["s2t"].values())


@pytest.mark.parametrize("case,needle", [
    ("missing", "not found"),
    ("extension", "expected a jacana .json"),
    ("bad_json", "invalid JSON"),
    ("two_files", "three files"),
    ("line_counts", "expected one sentence pair per line"),
    ("link_range", "mine.links:2"),
    ("bad_link", "mine.links:1"),
    ("tsv_columns", "mine.tsv:1"),
])
def test_bad_files_are_one_clear_error(tmp_path, case, needle):
    specs = _write_all(_pairs()[:3], tmp_path)
    src, tgt, links = specs["pharaoh"]
    spec = specs["pharaoh"]
    if case == "missing":
        spec = str(tmp_path / "nope.json")
    elif case == "extension":
        spec = src
    elif case == "bad_json":
        (tmp_path / "mine.json").write_text("[{", encoding="utf-8")
        spec = specs["jacana"]
    elif case == "two_files":
        spec = [src, tgt]
    elif case == "line_counts":
        (tmp_path / "mine.tgt").write_text("a b\n", encoding="utf-8")
    elif case == "link_range":
        lines = (tmp_path / "mine.links").read_text().splitlines()
        lines[1] += " 999-0"
        (tmp_path / "mine.links").write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif case == "bad_link":
        (tmp_path / "mine.links").write_text("0-x\n\n\n", encoding="utf-8")
    elif case == "tsv_columns":
        (tmp_path / "mine.tsv").write_text("only\ttwo\n", encoding="utf-8")
        spec = specs["multimwa"]
    with pytest.raises(AlignersInputError, match=needle) as err:
        read_annotated(spec, what="data.train_path")
    assert "\n" not in str(err.value)
