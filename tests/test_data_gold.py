"""Gold readers: every notation vs hand-worked examples, writer round trips, bad input."""

import json
from pathlib import Path

import pytest

from aligners.data.gold import (
    NullLinksWarning,
    read_alignment_file,
    read_naacl,
    read_onebased,
    read_snum_text,
    sniff_format,
    write_naacl,
    write_onebased,
)
from aligners.data.jacana import read_jacana_json, read_multimwa
from aligners.data.paths import data_root
from aligners.data.pharaoh import OutOfRangeLinksWarning, format_pharaoh
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

A = Alignment(frozenset({(0, 0), (2, 1)}), frozenset({(1, 1)}))
B = Alignment()
C = Alignment(frozenset({(3, 0)}))


def write(tmp_path, name, text, mode="w"):
    p = tmp_path / name
    (p.write_bytes if mode == "wb" else p.write_text)(text)
    return p


def test_naacl_hand_example(tmp_path):
    p = write(tmp_path, "g.wa", "0001 1 1 S\n0001 3 2\n0001 2 2 P\n0003 4 1 S 0.5\n")
    als = read_naacl(p)
    assert als == [A, B, C] and als[2].posteriors == {(3, 0): 0.5}
    # swap: column 3 is the source (Cs-En lists English first)
    assert read_naacl(p, swap=True)[0].sure == {(0, 0), (1, 2)}
    # 0-based tokens (Biçici De-En)
    assert read_naacl(p, token_base=0)[0].sure == {(1, 1), (3, 2)}
    # snums from the text: a trailing sentence without links is kept
    assert read_naacl(p, snums=[1, 2, 3, 4]) == [A, B, C, B]


def test_naacl_null_links_dropped_and_counted(tmp_path):
    p = write(tmp_path, "g.wa", "1 0 1 P\n1 1 1 S\n1 2 0 P\n")
    with pytest.warns(NullLinksWarning, match="dropped 2 NULL"):
        assert read_naacl(p) == [Alignment(frozenset({(0, 0)}))]


@pytest.mark.parametrize(
    "line", ["1 2", "1 a 3 S", "1 2 3 X", "1 2 3 S 2.0", "1 2 3 S 0.1 x", "-1 2 3"]
)
def test_naacl_malformed(tmp_path, line):
    p = write(tmp_path, "g.wa", f"1 1 1 S\n{line}\n")
    with pytest.raises(AlignersInputError, match=r"g.wa:2: malformed NAACL link"):
        read_naacl(p)


def test_naacl_unknown_snum_and_range(tmp_path):
    p = write(tmp_path, "g.wa", "1 1 1 S\n\n7 1 1 S\n")
    with pytest.raises(AlignersInputError, match=r"g.wa:3: sentence number 7 has links"):
        read_naacl(p, snums=[1, 2])
    with pytest.raises(AlignersInputError, match=r"g.wa:3: link \(0, 0\).*outside"):
        read_naacl(p, snums=[1, 7], src_lengths=[1, 0], tgt_lengths=[1, 1])
    with pytest.warns(OutOfRangeLinksWarning, match="dropped 1"):
        als = read_naacl(p, snums=[1, 7], src_lengths=[1, 0], tgt_lengths=[1, 1], lenient=True)
    assert als == [Alignment(frozenset({(0, 0)})), Alignment()]


def test_naacl_round_trip(tmp_path):
    p = tmp_path / "out.wa"
    assert write_naacl([A, B, C, B], p, snums=[5, 6, 7, 8]) == 4
    assert p.read_text().splitlines()[0] == "0005 1 1 S"
    assert read_naacl(p, snums=[5, 6, 7, 8]) == [A, B, C, B]
    p.write_text("1 0 0 S\n1 1 1 P\n1 2 1 S\n2 3 0 S\n")  # naacl0: read, never written
    assert read_naacl(p, token_base=0) == [A, C]


def test_snum_text(tmp_path):
    p = write(tmp_path, "t.e", b"\xef\xbb\xbf<s snum=0007> a  b </s>\r\n<s snum=9></s>\n", "wb")
    assert read_snum_text(p) == [(7, ["a", "b"]), (9, [])]
    bad = write(tmp_path, "b.e", "<s snum=1> a </s>\nplain text\n")
    with pytest.raises(AlignersInputError, match=r"b.e:2: expected '<s snum=N>"):
        read_snum_text(bad)
    dup = write(tmp_path, "d.e", "<s snum=1> a </s>\n<s snum=1> b </s>\n")
    with pytest.raises(AlignersInputError, match=r"d.e:2: sentence number 1 repeated"):
        read_snum_text(dup)


def test_onebased(tmp_path):
    p = write(tmp_path, "g", "1-1 3-2 2p2\n\n4-1\n")
    assert read_onebased(p) == [A, B, C]
    out = tmp_path / "o"
    write_onebased([A, B, C], out)
    assert out.read_text() == "1-1 2p2 3-2\n\n4-1\n"
    assert read_onebased(out) == [A, B, C]
    zero = write(tmp_path, "z", "1-1\n0-2\n")
    with pytest.raises(AlignersInputError, match=r"z:2: index 0 in a 1-based"):
        read_onebased(zero)


def write_jacana_json(pairs, out, *, sure_plus_poss=False) -> int:
    """`AlignedPair`s as a jacana JSON array (`sure_plus_poss`: sureAlign = S∪P and
    possibleAlign = P-only, the `*.sure+poss.json` convention); returns the count."""
    items = []
    for n, p in enumerate(pairs):
        al = p.alignment or Alignment()
        sure_links = al.possible if sure_plus_poss else al.sure
        ident = p.id if p.id is not None else str(n + 1)
        items.append({"id": ident, "name": ident, "source": " ".join(p.src),
                      "target": " ".join(p.tgt),
                      "sureAlign": format_pharaoh(Alignment(frozenset(sure_links))),
                      "possibleAlign": format_pharaoh(Alignment(al.possible - al.sure))})
    Path(out).write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n",
                         encoding="utf-8")
    return len(items)


def test_jacana_json_round_trip_and_sure_plus_poss(tmp_path):
    pairs = [AlignedPair(("a", "b", "c", "d"), ("x", "y"), A, "p1"),
             AlignedPair((), (), B, "p2"), AlignedPair(("a",) * 4, ("z",), C, "p3")]
    for sp in (False, True):
        p = tmp_path / f"g{sp}.json"
        assert write_jacana_json(pairs, p, sure_plus_poss=sp) == 3
        assert read_jacana_json(p, sure_plus_poss=sp) == pairs
    # the sure+poss convention: sureAlign = S∪P, possibleAlign = P
    item = json.loads((tmp_path / "gTrue.json").read_text())[0]
    assert item["sureAlign"] == "0-0 1-1 2-1" and item["possibleAlign"] == "1-1"
    assert read_alignment_file(tmp_path / "gFalse.json") == [A, B, C]


def test_jacana_errors(tmp_path):
    p = write(tmp_path, "bad.json", '[\n{"source": "a", "target": "b",\n "sureAlign": }]')
    with pytest.raises(AlignersInputError, match=r"bad.json:3: invalid JSON"):
        read_jacana_json(p)
    p = write(tmp_path, "k.json", '[{"source": "a"}]')
    with pytest.raises(AlignersInputError, match=r"item 1: expected an object with keys"):
        read_jacana_json(p)
    p = write(tmp_path, "r.json", '[{"source": "a", "target": "b", "sureAlign": "0-0 1-0"}]')
    with pytest.raises(AlignersInputError, match=r"r.json:1: link \(1, 0\)"):
        read_jacana_json(p)
    with pytest.warns(OutOfRangeLinksWarning):
        assert read_jacana_json(p, lenient=True)[0].alignment.sure == {(0, 0)}


def test_multimwa(tmp_path):
    row = "0:0\ta b c\tN/A\tx y\tN/A\t1\t1\t0-0 2-1\t1-1\t"
    p = write(tmp_path, "m.tsv", row + "\n" + row.replace("0:0", "1:1"))  # no final newline
    pairs = read_multimwa(p)
    assert len(pairs) == 2 and pairs[0].src == ("a", "b", "c") and pairs[1].id == "1:1"
    assert pairs[0].alignment == A
    bad = write(tmp_path, "b.tsv", row + "\nonly\ttwo\n")
    with pytest.raises(AlignersInputError, match=r"b.tsv:2: 2 tab-separated fields; expected 10"):
        read_multimwa(bad)


def test_sniff_and_dispatch(tmp_path):
    naacl = write(tmp_path, "g.wa", "\n1 1 1 S\n")
    phar = write(tmp_path, "g.txt", "0-0 1-1\n")
    assert sniff_format(naacl) == "naacl" and sniff_format(phar) == "pharaoh"
    assert sniff_format(tmp_path / "x.sure+poss.json") == "jacana-sp"
    assert sniff_format(tmp_path / "x.tsv") == "multimwa"
    assert read_alignment_file(naacl) == [Alignment(frozenset({(0, 0)}))]
    one = write(tmp_path, "g1.txt", "1-1 2p2\n")
    assert read_alignment_file(one, fmt="onebased") == [
        Alignment(frozenset({(0, 0)}), frozenset({(1, 1)}))
    ]
    with pytest.raises(AlignersInputError, match="index 0"):
        read_alignment_file(phar, fmt="onebased")
    with pytest.raises(AlignersInputError, match="unknown alignment format 'xml'"):
        read_alignment_file(phar, fmt="xml")


@pytest.mark.skipif(not (data_root() / "INDEX.md").exists(), reason="shipped data absent")
def test_bicici_naacl0_equals_pharaoh():
    d = data_root() / "europarl-deen-bicici"
    ref = read_alignment_file(d / "de-en.ref.wa", fmt="naacl0", snums=list(range(1, 101)))
    assert ref == read_alignment_file(d / "de-en.wa")
