"""`aligners convert`: notation round trips through the CLI, range checks, --lenient."""

import pytest

from aligners.cli import main
from aligners.data.gold import read_naacl
from aligners.data.paths import data_root
from aligners.data.pharaoh import read_pharaoh
from aligners.data.types import Alignment


def test_convert_naacl_pharaoh_round_trip(tmp_path, capsys):
    wa = tmp_path / "g.wa"
    wa.write_text("0001 1 2 S\n0001 2 1 P\n0003 1 1 S\n")
    src = tmp_path / "s.e"
    src.write_text("<s snum=0001> a b </s>\n<s snum=0002> c </s>\n<s snum=0003> d </s>\n"
                   "<s snum=0004> e </s>\n")
    tgt = tmp_path / "t.f"
    tgt.write_text("<s snum=1> x y </s>\n<s snum=2> z </s>\n<s snum=3> w </s>\n<s snum=4> v </s>\n")
    ph = tmp_path / "g.ph"
    assert main(["convert", "-i", str(wa), "--src", str(src), "--tgt", str(tgt),
                 "-o", str(ph)]) == 0
    assert ph.read_text() == "0-1 1?0\n\n0-0\n\n"  # 4 sentences from the text, empty kept
    back = tmp_path / "back.wa"
    assert main(["convert", "-i", str(ph), "--to", "naacl", "--src", str(src),
                 "-o", str(back)]) == 0
    assert read_naacl(back, snums=[1, 2, 3, 4]) == read_pharaoh(ph)
    assert back.read_text().splitlines()[0] == "0001 1 2 S"
    one = tmp_path / "g.1b"
    assert main(["convert", "-i", str(ph), "--to", "onebased", "-o", str(one), "--swap"]) == 0
    assert one.read_text() == "1p2 2-1\n\n1-1\n\n"


def test_convert_range_error_and_lenient(tmp_path, capsys):
    ph = tmp_path / "a.ph"
    ph.write_text("0-0 1-3\n")
    text = tmp_path / "st.txt"
    text.write_text("a b ||| x y\n")
    assert main(["convert", "-i", str(ph), "--text", str(text)]) == 2
    err = capsys.readouterr().err
    assert "a.ph:1: link (1, 3)" in err and "--lenient" in err
    out = tmp_path / "o.ph"
    assert main(["convert", "-i", str(ph), "--text", str(text), "--lenient", "-o",
                 str(out)]) == 0
    assert "dropped 1 link" in capsys.readouterr().err
    assert read_pharaoh(out) == [Alignment(frozenset({(0, 0)}))]


def test_convert_needs_input(capsys):
    assert main(["convert"]) == 2
    assert "give -i/--input" in capsys.readouterr().err


@pytest.mark.skipif(not (data_root() / "INDEX.md").exists(), reason="shipped data absent")
def test_convert_registry_dataset(tmp_path, capsys):
    out = tmp_path / "enhi.ph"
    assert main(["convert", "--dataset", "wpt-enhi", "-o", str(out)]) == 0
    assert "dropped 1 out-of-range" in capsys.readouterr().err
    als = read_pharaoh(out)
    assert len(als) == 90 and sum(len(a) for a in als) == 1408
