"""aligners.metrics on hand-worked examples, identities, and the Hansards AER check."""

from fractions import Fraction as Fr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aligners.data.types import Alignment
from aligners.metrics import evaluate_alignments, format_report

# pair 1: S = {0-0, 1-1}, P = S + {2-2}; predicted {0-0, 2-2, 2-1}
# pair 2: S = P = {0-0};                   predicted {0-0}
GOLD = [
    Alignment(frozenset({(0, 0), (1, 1)}), frozenset({(2, 2)})),
    Alignment(frozenset({(0, 0)})),
]
TEST = [{(0, 0), (2, 2), (2, 1)}, {(0, 0)}]
SRC = [["a", "b", "c"], ["d"]]
TGT = [["a", "x", "c"], ["e"]]


def close(x, frac):
    return x == pytest.approx(float(frac), abs=1e-12)


def test_hand_worked_micro():
    r = evaluate_alignments(GOLD, TEST)
    c = r.counts
    assert (c.predicted, c.sure, c.hit_sure, c.hit_possible) == (4, 3, 2, 3)
    assert close(r.micro.precision, Fr(3, 4))
    assert close(r.micro.recall, Fr(2, 3))
    assert close(r.micro.aer, Fr(2, 7))  # 1 - (2 + 3) / (4 + 3)
    assert close(r.micro.f1, Fr(12, 17))
    assert r.exact_matches == 1 and close(r.exact_match, Fr(1, 2))


def test_hand_worked_macro_and_f_alpha():
    r = evaluate_alignments(GOLD, TEST, alpha=0.4)
    # per pair: P = 2/3, 1; R = 1/2, 1; AER = 2/5, 0
    assert close(r.macro.precision, Fr(5, 6))
    assert close(r.macro.recall, Fr(3, 4))
    assert close(r.macro.f1, Fr(15, 19))
    assert close(r.macro.aer, Fr(1, 5))
    # F_0.4 = 1 / (0.4 / P + 0.6 / R) with micro P = 3/4, R = 2/3
    assert close(r.micro.f_alpha, 1 / (Fr(2, 5) / Fr(3, 4) + Fr(3, 5) / Fr(2, 3)))
    one = evaluate_alignments(GOLD[:1], TEST[:1], alpha=0.4)
    assert close(one.micro.f_alpha, Fr(5, 9))  # 1 / (0.4 * 3/2 + 0.6 * 2)


def test_identity_breakdown():
    r = evaluate_alignments(GOLD, TEST, src_tokens=SRC, tgt_tokens=TGT)
    ident, non = r.breakdown_counts["identical"], r.breakdown_counts["non-identical"]
    # identical links: predicted 0-0 a/a, 2-2 c/c (P link); sure gold 0-0
    assert (ident.predicted, ident.sure, ident.hit_sure, ident.hit_possible) == (2, 1, 1, 2)
    # non-identical: predicted 2-1 (wrong) and d/e 0-0; sure gold 1-1 b/x and d/e 0-0
    assert (non.predicted, non.sure, non.hit_sure, non.hit_possible) == (2, 2, 1, 1)
    assert close(r.breakdown_micro["non-identical"].precision, Fr(1, 2))
    # macro: pair 1 has P = R = 0 for non-identical, pair 2 has 1 -> 1/2; identical occurs
    # only in pair 1 (P = R = 1)
    assert close(r.breakdown_macro["non-identical"].recall, Fr(1, 2))
    assert close(r.breakdown_macro["identical"].precision, 1)
    assert close(r.breakdown_macro["identical"].recall, 1)


def test_phrasality_breakdown():
    r = evaluate_alignments(GOLD, TEST)
    assert "identical" not in r.breakdown_counts  # needs tokens
    tok, phr = r.breakdown_counts["token"], r.breakdown_counts["phrase"]
    # predicted 2-2 and 2-1 share source word 2 -> phrasal; 0-0 (twice) token-only
    assert (tok.predicted, tok.sure, tok.hit_sure, tok.hit_possible) == (2, 3, 2, 2)
    assert (phr.predicted, phr.sure, phr.hit_sure, phr.hit_possible) == (2, 0, 0, 1)
    assert close(r.breakdown_micro["token"].recall, Fr(2, 3))
    assert close(r.breakdown_micro["phrase"].precision, Fr(1, 2))
    assert r.breakdown_micro["phrase"].recall == 0.0


def test_phrasal_blocks_are_connected_components():
    # gold block {0,1} x {0}: both links phrasal; 2-2 token-only. A prediction that links
    # only 0-0 has token-only precision 1 but phrase recall 1/2.
    gold = [Alignment(frozenset({(0, 0), (1, 0), (2, 2)}))]
    r = evaluate_alignments(gold, [{(0, 0), (2, 2)}])
    assert r.breakdown_counts["phrase"].sure == 2
    assert close(r.breakdown_micro["phrase"].recall, Fr(1, 2))
    assert close(r.breakdown_micro["token"].precision, 1)
    assert r.breakdown_counts["token"].predicted == 2


def test_exact_match_allows_possible_links():
    gold = [Alignment(frozenset({(0, 0)}), frozenset({(1, 1)}))]
    assert evaluate_alignments(gold, [{(0, 0), (1, 1)}]).exact_matches == 1
    assert evaluate_alignments(gold, [{(0, 0)}]).exact_matches == 1
    assert evaluate_alignments(gold, [{(1, 1)}]).exact_matches == 0
    assert evaluate_alignments(gold, [{(0, 0), (1, 0)}]).exact_matches == 0


def test_empty_pairs_give_no_nan():
    gold = [Alignment(), Alignment(frozenset({(0, 0)}))]
    r = evaluate_alignments(gold, [set(), {(0, 0)}])
    assert (r.micro.aer, r.macro.aer, r.macro.precision, r.macro.recall) == (0, 0, 1, 1)
    r = evaluate_alignments([Alignment()], [set()])
    assert (r.micro.precision, r.micro.aer, r.micro.f1) == (0, 0, 0)
    assert r.exact_matches == 1


def test_errors():
    with pytest.raises(ValueError, match="gold has 2 pairs but test has 1"):
        evaluate_alignments(GOLD, TEST[:1])
    with pytest.raises(ValueError, match="alpha"):
        evaluate_alignments(GOLD, TEST, alpha=1.5)


links = st.frozensets(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(links, links, links), min_size=1, max_size=4))
def test_identities(data):
    gold = [Alignment(s, p) for s, p, _ in data]
    test = [a for _, _, a in data]
    r = evaluate_alignments(gold, test)
    assert 0.0 <= r.micro.aer <= 1.0
    selfr = evaluate_alignments(gold, gold)
    if any(g.sure for g in gold):
        assert selfr.micro.aer == 0.0 and selfr.micro.f1 == 1.0
        assert selfr.macro.f1 == 1.0
    assert selfr.exact_match == 1.0
    # with S = P, AER = 1 - F1 (Och & Ney)
    sure_only = [Alignment(s) for s, _, _ in data]
    rs = evaluate_alignments(sure_only, test)
    if rs.counts.predicted and rs.counts.sure:
        assert rs.micro.aer == pytest.approx(1.0 - rs.micro.f1, abs=1e-12)


def test_report_layout():
    text = format_report(evaluate_alignments(GOLD, TEST, src_tokens=SRC, tgt_tokens=TGT))
    assert "AER 0.2857 (micro)" in text
    assert "Pi/Pn" in text and "Pt/Pp" in text
    assert "F0.4" in format_report(evaluate_alignments(GOLD, TEST, alpha=0.4))


def test_write_metrics_json_schema(tmp_path):
    import json

    from aligners.metrics import write_metrics_json

    out = tmp_path / "metrics.json"
    write_metrics_json(out, {"test": {"aer": 0.08, "pairs": 447}})
    assert json.loads(out.read_text()) == {"test": {"aer": 0.08, "pairs": 447}}
    with pytest.raises(ValueError, match="not finite"):
        write_metrics_json(out, {"test": {"aer": float("nan")}})
    with pytest.raises(TypeError, match="not a number"):
        write_metrics_json(out, {"test": {"aer": {"nested": 1}}})
    assert json.loads(out.read_text()) == {"test": {"aer": 0.08, "pairs": 447}}
