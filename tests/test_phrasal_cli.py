"""`aligners align --model gappy-hsmm`: outputs, save/load round trip, bad input."""

import pytest
from test_phrasal_model import phrasal_toy

from aligners.cli import main

FAST = ["--model", "gappy-hsmm", "--ibm1-iterations", "2", "--hmm-iterations", "2",
        "--phrasal-iterations", "2", "--quiet", "--max-jump", "3"]


def _corpus(tmp_path, n=80):
    src, tgt = phrasal_toy(n)
    p = tmp_path / "c.txt"
    p.write_text("".join(" ".join(s) + " ||| " + " ".join(t) + "\n" for s, t in zip(src, tgt)),
                 encoding="utf-8")
    return p, src, tgt


def _links(path):
    return [{tuple(int(x) for x in tok.split(":")[0].split("-")) for tok in line.split()}
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_train_save_load_same_links(tmp_path, capsys):
    p, src, tgt = _corpus(tmp_path)
    f, r, o = tmp_path / "f", tmp_path / "r", tmp_path / "o"
    assert main(["align", "-i", str(p), "-f", str(f), "-r", str(r), "-o", str(o),
                 "--save-model", str(tmp_path / "m"), *FAST]) == 0
    fwd, rev, sym = _links(f), _links(r), _links(o)
    assert len(fwd) == len(rev) == len(sym) == len(src)
    for n, links in enumerate(sym):
        assert all(0 <= i < len(src[n]) and 0 <= j < len(tgt[n]) for i, j in links)
    assert sum(len(x) for x in sym) > 0.7 * sum(len(t) for t in tgt)
    o2 = tmp_path / "o2"
    assert main(["align", "-i", str(p), "--load-model", str(tmp_path / "m"), "-o", str(o2),
                 "--posteriors", "--quiet", "--model", "gappy-hsmm"]) == 0
    assert _links(o2) == sym
    line = o2.read_text(encoding="utf-8").splitlines()[0].split()[0]
    assert 0.0 <= float(line.split(":")[1]) <= 1.0


def test_phrasal_p0_reaches_the_saved_model(tmp_path, capsys):
    """--phrasal-p0 sets the phrasal model's NULL probability (not the word HMM's --p0);
    out of [0, 1) it is one line naming the flag."""
    from aligners.export import load

    p, _, _ = _corpus(tmp_path, 40)
    assert main(["align", "-i", str(p), "-o", str(tmp_path / "o"), "--phrasal-p0", "0.2",
                 "--save-model", str(tmp_path / "m"), *FAST]) == 0
    bundle = load(tmp_path / "m")
    assert bundle.aligner.config.p0 == pytest.approx(0.2)
    assert main(["align", "-i", str(p), "--phrasal-p0", "1.5", *FAST]) == 2
    assert capsys.readouterr().err == ("aligners align: error: --phrasal-p0 must be a number "
                                       "in [0, 1); got 1.5\n")


@pytest.mark.parametrize("decoding", ["viterbi", "posterior"])
def test_other_decodings(tmp_path, decoding):
    p, src, _ = _corpus(tmp_path, 40)
    o = tmp_path / "o"
    assert main(["align", "-i", str(p), "-o", str(o), "--decoding", decoding, "--no-gappy",
                 *FAST]) == 0
    assert len(_links(o)) == len(src)


def test_bad_model_folders_are_clear_errors(tmp_path, capsys):
    p, _, _ = _corpus(tmp_path, 20)
    assert main(["align", "-i", str(p), "--load-model", str(tmp_path / "missing"), *FAST]) != 0
    assert "no model folder" in capsys.readouterr().err
    word = tmp_path / "word"
    assert main(["align", "-i", str(p), "--save-model", str(word), "--quiet", "--model", "hmm",
                 "--ibm1-iterations", "1", "--hmm-iterations", "1"]) == 0
    capsys.readouterr()
    assert main(["align", "-i", str(p), "--load-model", str(word), *FAST]) != 0
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
