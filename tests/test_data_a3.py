"""GIZA A3 (MSR06 orig) reader: hand-worked block, BOMs, the missing ')' quirk, bad input."""

import pytest

from aligners.data.a3 import parse_a3_target, read_a3
from aligners.data.gold import read_alignment_file, sniff_format
from aligners.data.pharaoh import OutOfRangeLinksWarning
from aligners.data.types import Alignment
from aligners.errors import AlignersInputError

BLOCK = (
    "\ufeff\ufeff# sentence pair 7\r\n"
    "\ufeffA b c d\r\n"
    "NULL ({ / / }) \ufeffX ({ 2 p1 / / }) ( ({ }) Y ({ p4 / / })\r\n"
)


def test_parse_target_hand_example():
    words, al = parse_a3_target("NULL ({ 3 / / }) X ({ 2 p1 / / }) ( ({ }) Y ({ p4 / / })")
    assert words == ("X", "(", "Y")
    assert al == Alignment(frozenset({(1, 0)}), frozenset({(0, 0), (3, 2)}))
    # a final entry without ')' is accepted (the end of MSR's orig/RTE2_dev_C)
    assert parse_a3_target("NULL ({ }) X ({ 1 / / }")[1].sure == {(0, 0)}


def test_read_a3_and_dispatch(tmp_path):
    p = tmp_path / "x.align.txt"
    p.write_text(BLOCK + BLOCK.replace("pair 7", "pair 8"), encoding="utf-8")
    pairs = read_a3(p)
    assert [q.id for q in pairs] == ["7", "8"]
    assert pairs[0].src == ("A", "b", "c", "d") and pairs[0].tgt == ("X", "(", "Y")
    assert sniff_format(p) == "a3"
    assert read_alignment_file(p) == [pairs[0].alignment] * 2


@pytest.mark.parametrize(
    ("target", "match"),
    [("NULL ({ }) X ({ 0 })", "malformed position '0'"),
     ("NULL ({ }) X ({ q2 })", "malformed position 'q2'"),
     ("NULL ({ }) X ({ 1 }) junk", "expected 'NULL"),
     ("just words", "expected 'NULL")],
)
def test_read_a3_bad_target(tmp_path, target, match):
    p = tmp_path / "bad.txt"
    p.write_text(f"# sentence pair 1\na b\n{target}\n")
    with pytest.raises(AlignersInputError, match=rf"bad.txt:3: .*{match}"):
        read_a3(p)


def test_read_a3_structure_and_range(tmp_path):
    p = tmp_path / "s.txt"
    p.write_text("# pair 1\na b\nNULL ({ }) X ({ 1 })\nextra\n")
    with pytest.raises(AlignersInputError, match="blocks of 3"):
        read_a3(p)
    p.write_text("a b\nc\nNULL ({ }) X ({ 1 })\n")
    with pytest.raises(AlignersInputError, match=r"s.txt:1: expected a '# sentence pair N'"):
        read_a3(p)
    p.write_text("# pair 1\na b\nNULL ({ }) X ({ 1 3 })\n")
    with pytest.raises(AlignersInputError, match=r"s.txt:3: link \(2, 0\)"):
        read_a3(p)
    with pytest.warns(OutOfRangeLinksWarning):
        assert read_a3(p, lenient=True)[0].alignment.sure == {(0, 0)}
