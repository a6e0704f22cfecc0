"""Table 5 scoring helpers vs hand-worked values."""

import pytest

from aligners.applications import (
    accuracy_prf,
    mean_average_precision,
    mean_reciprocal_rank,
    tokenize,
    tune_threshold,
)


def test_tokenize_ptb_like():
    assert tokenize("The U.S. company's shares didn't rise, 1,200 said.") == [
        "The", "U.S.", "company", "'s", "shares", "did", "n't", "rise", ",", "1,200",
        "said", "."]


def test_map_mrr_hand_values():
    # AP([0,1,0,1]) = (1/2 + 2/4) / 2 = 0.5; AP([1,0]) = 1
    assert mean_average_precision([[0, 1, 0, 1], [1, 0]]) == pytest.approx(0.75)
    # RR = 1/2, 1, 0 (no relevant item)
    assert mean_reciprocal_rank([[0, 1, 0, 1], [1, 0], [0, 0]]) == pytest.approx(0.5)


def test_threshold_tuning_and_prf():
    scores, labels = [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]
    thr, acc = tune_threshold(scores, labels)
    assert acc == pytest.approx(0.75)
    assert accuracy_prf(scores, labels, thr)[0] == pytest.approx(0.75)
    # threshold 0.3: predicts 0,1,1,1 -> acc 3/4, precision 2/3, recall 1
    assert accuracy_prf(scores, labels, 0.3) == pytest.approx((0.75, 2 / 3, 1.0))
    thr, acc = tune_threshold([0.2, 0.9], [0, 1])
    assert acc == 1.0 and 0.2 < thr < 0.9


def test_alignment_scores_from_a_loaded_model_folder(tmp_path):
    """`aligners.load(folder)` -> MonoAligner -> scores normalised by I, J and I + J (the same
    raw Viterbi score); an empty side becomes one `<empty>` token."""
    import torch

    import aligners
    from aligners.applications import alignment_scores
    from aligners.models.mono.aligner import MonoAligner, build_model
    torch.manual_seed(0)
    crf = build_model(kind="phrase", max_src_len=2, max_tgt_len=2)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_(0, 0.5)
    model = aligners.load(MonoAligner({"s2t": crf}, kind="phrase").save(tmp_path / "m"))
    pairs = [("the cat sat on the mat".split(), "a cat sat".split()), ([], ["x"])]
    sc = alignment_scores(model, pairs)
    raw = [s * 6 for s in sc["src"][:1]] + [sc["src"][1] * 1]
    assert sc["tgt"] == pytest.approx([raw[0] / 3, raw[1] / 1])
    assert sc["both"] == pytest.approx([raw[0] / 9, raw[1] / 2])
    direct = model.align([(("the", "cat", "sat", "on", "the", "mat"), ("a", "cat", "sat"))])
    assert sc["src"][0] == pytest.approx(direct[0][2])


def test_applications_import_no_lightning_nor_training(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from aligners.models.mono.aligner import MonoAligner, build_model
    folder = MonoAligner({"s2t": build_model(kind="token")}, kind="token").save(tmp_path / "m")
    code = ("import sys, aligners, aligners.applications as a\n"
            f"m = aligners.load({str(folder)!r})\n"
            "a.alignment_scores(m, [(['a', 'b'], ['a'])])\n"
            "print(sorted(x for x in sys.modules if x.split('.')[0] in "
            "('pytorch_lightning', 'lightning', 'hydra') or x.startswith('aligners.training')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
