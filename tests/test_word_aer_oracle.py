"""`aligners evaluate`'s 0.0805 (eflomal grow-diag-final-and on the Hansards test set) checked
against a scorer written here, independently of aligners.metrics and aligners.data:
the NAACL gold and the Pharaoh test file are parsed by hand and AER computed from sets,
AER = 1 - (|A & S| + |A & P|) / (|A| + |S|) with P the sure and possible links (P >= S)."""

import json

import pytest
from conftest import shared_path

from aligners.cli import main


def _naacl(path):
    """{snum: (sure set, possible set)} with 0-based (english, french) positions."""
    gold = {}
    for raw in open(path, encoding="utf-8"):
        parts = raw.split()
        if not parts:
            continue
        snum, e, f = int(parts[0]), int(parts[1]) - 1, int(parts[2]) - 1
        kind = parts[3] if len(parts) > 3 else "S"
        sure, possible = gold.setdefault(snum, (set(), set()))
        possible.add((e, f))  # P includes S
        if kind == "S":
            sure.add((e, f))
    return gold


def _pharaoh(path):
    out = []
    for raw in open(path, encoding="utf-8"):
        links = set()
        for tok in raw.split():
            i, j = tok.split("-")
            links.add((int(i), int(j)))
        out.append(links)
    return out


def _snums(text_path):
    return [int(line.split("snum=")[1].split(">")[0]) for line in open(text_path,
                                                                        encoding="utf-8")]


def test_evaluate_0805_equals_an_independent_scorer(capsys):
    root = shared_path("data", "hansards-enfr-naacl2003", "test")
    test_file = shared_path("oracles", "symmetrize", "eflomal.enfr.grow-diag-final-and")
    gold = _naacl(root / "test.wa.nonullalign")
    snums = _snums(root / "test.e")
    pred = _pharaoh(test_file)
    assert len(snums) == len(pred) == 447
    a = s = a_s = a_p = 0
    for n, links in zip(snums, pred, strict=True):
        sure, possible = gold.get(n, (set(), set()))
        a += len(links)
        s += len(sure)
        a_s += len(links & sure)
        a_p += len(links & possible)
    oracle = 1 - (a_s + a_p) / (a + s)
    assert oracle == pytest.approx(0.0805, abs=0.00005)
    assert main(["evaluate", "--gold", str(root / "test.wa.nonullalign"), "--test",
                 str(test_file), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["micro"]["aer"] == pytest.approx(oracle, abs=1e-12)
    assert r["counts"] == {"predicted": a, "sure": s, "hit_sure": a_s, "hit_possible": a_p}
