"""One scorer, one rule (issue 9 item 6): `python evaluate.py ... data.test_path=X.sure+poss.json`
and `aligners evaluate --gold X.sure+poss.json` give the same numbers on a real file, and both
read its `sureAlign` as S∪P (P-only links are not counted as sure)."""

import json

import torch

from aligners.cli import main
from aligners.data.jacana import read_annotated
from aligners.models.mono.aligner import MonoAligner, build_model
from aligners.training.baseline import flatten_numbers
from aligners.training.mono import evaluate
from tests.conftest import shared_path
from tests.test_mono_training import _cfg


def test_evaluate_py_and_aligners_evaluate_agree_on_sure_plus_poss(tmp_path, capsys):
    full = shared_path("data", "msr-rte2006-aligned", "converted",
                       "RTE2_test_M.align.sure+poss.json")
    gold = tmp_path / "first150.sure+poss.json"  # the real file's first 150 items, verbatim
    gold.write_text(json.dumps(json.loads(full.read_text(encoding="utf-8"))[:150]),
                    encoding="utf-8")
    torch.manual_seed(0)
    crf = build_model(kind="token")
    with torch.no_grad():
        crf.w_emit.normal_(0, 0.5)
        crf.w_emit[crf.feature_names.index("sum_identical")] = 3.0
    folder = MonoAligner({"s2t": crf}, kind="token").save(tmp_path / "model")
    out = tmp_path / "ev"
    metrics = evaluate(_cfg("evaluate", ["experiment=tokencrf_msr06", f"ckpt_path={folder}",
                                         f"data.test_path={gold}"], out))
    capsys.readouterr()
    rc = main(["evaluate", "--gold", str(gold), "--test",
               str(out / "predictions.test.s2t.pharaoh"), "--json"])
    assert rc == 0
    cli = flatten_numbers(json.loads(capsys.readouterr().out), sep="/", finite=False)
    assert cli == metrics["test/s2t"]
    # the rule: sure = sureAlign minus possibleAlign; P-only links only help precision
    pairs = read_annotated(str(gold))
    n_sure = sum(len(p.alignment.sure) for p in pairs)
    n_poss = sum(len(p.alignment.possible) for p in pairs)
    assert metrics["test/s2t"]["counts/sure"] == n_sure < n_poss
    assert metrics["test/s2t"]["counts/predicted"] > 0
