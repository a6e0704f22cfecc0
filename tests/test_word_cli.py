"""`aligners align`: output order, save/load round trip, unseen words, bad input."""

import json

import pytest
from word_toy import toy_corpus

from aligners.cli import main
from aligners.errors import AlignersInputError
from aligners.models.hmm.folder import TrainedWordAligner

FAST = ["--model", "hmm", "--ibm1-iterations", "2", "--hmm-iterations", "2", "--quiet",
        "--max-jump", "3"]


def write_corpus(tmp_path, n=60, seed=0):
    src, tgt = toy_corpus(n, seed)
    s, t = tmp_path / "c.src", tmp_path / "c.tgt"
    s.write_text("".join(" ".join(x) + "\n" for x in src), encoding="utf-8")
    t.write_text("".join(" ".join(x) + "\n" for x in tgt), encoding="utf-8")
    return s, t, src, tgt


def links(path):
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        out.append({tuple(int(x) for x in tok.split(":")[0].split("-")) for tok in line.split()})
    return out


@pytest.mark.parametrize("decoding", ["viterbi", "posterior", "agreement"])
def test_both_directions_are_written_in_source_target_order(tmp_path, decoding):
    s, t, src, tgt = write_corpus(tmp_path)
    f, r = tmp_path / "f", tmp_path / "r"
    assert main(["align", "-s", str(s), "-t", str(t), "-f", str(f), "-r", str(r),
                 "--decoding", decoding, *FAST]) == 0
    fwd, rev = links(f), links(r)
    assert len(fwd) == len(rev) == len(src)
    for n, (a, b) in enumerate(zip(fwd, rev)):
        for i, j in a | b:
            assert 0 <= i < len(src[n]) and 0 <= j < len(tgt[n])
    if decoding == "viterbi":  # forward: one source word per target word at most
        for a in fwd:
            js = [j for _, j in a]
            assert len(js) == len(set(js))
        for b in rev:
            is_ = [i for i, _ in b]
            assert len(is_) == len(set(is_))
    # the synthetic lexicon s_k -> t_k is found in both directions
    hits = sum(src[n][i][1:] == tgt[n][j][1:] for n, a in enumerate(fwd) for i, j in a)
    assert hits >= 0.8 * sum(len(a) for a in fwd)


def test_save_load_round_trip_aligns_identically_and_handles_unseen_words(tmp_path, capsys):
    s, t, src, tgt = write_corpus(tmp_path)
    model_dir = tmp_path / "model"
    out1 = tmp_path / "a1"
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(out1), "--posteriors",
                 "--save-model", str(model_dir), *FAST]) == 0
    cfg = json.loads((model_dir / "config.json").read_text())
    assert cfg["format"] == "aligners/1" and cfg["kind"] == "hmm"
    assert not list(model_dir.glob("*.pt")) and not list(model_dir.glob("*.pkl"))
    out2 = tmp_path / "a2"
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(out2), "--posteriors",
                 "--load-model", str(model_dir), "--quiet"]) == 0
    assert out1.read_text() == out2.read_text()
    out4 = tmp_path / "a4"  # the pair index memory-mapped from disk: same output
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(out4), "--posteriors",
                 "--load-model", str(model_dir), "--quiet", "--cache-dir",
                 str(tmp_path / "cache")]) == 0
    assert out4.read_text() == out1.read_text()
    assert (tmp_path / "cache").is_dir()
    # new sentences with unseen words on both sides, via one `src ||| tgt` file
    new = tmp_path / "new.txt"
    new.write_text("s1 zzz s2 ||| t1 t2 qqq\nunseen ||| words\ns3 ||| t3\n", encoding="utf-8")
    out3 = tmp_path / "a3"
    assert main(["align", "-i", str(new), "-o", str(out3), "--load-model", str(model_dir),
                 "--quiet"]) == 0
    got = links(out3)
    assert len(got) == 3
    assert (2, 1) in got[0] and (0, 0) in got[0]
    assert (0, 0) in got[2]
    saved = TrainedWordAligner.from_folder(model_dir)
    assert saved.src_ids.frozen and saved.tgt_ids.frozen
    assert saved.decoding.method == "agreement" and saved.decoding.symmetrize == "none"


def test_bad_input_errors(tmp_path, capsys):
    s, t, _, _ = write_corpus(tmp_path, n=5)
    short = tmp_path / "short.tgt"
    short.write_text("t1\n", encoding="utf-8")
    assert main(["align", "-s", str(s), "-t", str(short), *FAST]) == 2
    assert "line" in capsys.readouterr().err
    assert main(["align", "-s", str(s), *FAST]) == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("no separator here\n", encoding="utf-8")
    assert main(["align", "-i", str(bad), *FAST]) == 2
    assert main(["align", "-s", str(s), "-t", str(t), "--load-model",
                 str(tmp_path / "nope"), "--quiet"]) == 2
    assert main(["align", "-s", str(s), "-t", str(t), "--symmetrize", "bogus", *FAST]) == 2
    with pytest.raises(AlignersInputError):
        TrainedWordAligner.from_folder(tmp_path)


def test_empty_lines_get_empty_alignments(tmp_path):
    src = tmp_path / "s"
    tgt = tmp_path / "t"
    src.write_text("s1 s2\n\ns3\n", encoding="utf-8")
    tgt.write_text("t1 t2\nt9\n\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["align", "-s", str(src), "-t", str(tgt), "-o", str(out), *FAST]) == 0
    lines = out.read_text().split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[2] == ""


def test_sentences_longer_than_eflomal_limit_are_aligned(tmp_path):
    n = 1030  # eflomal refuses sentences over 1024 tokens
    short = [(f"s{k} s{(k * 7 + 3) % n}", f"t{(k * 7 + 3) % n} t{k}") for k in range(n)]
    src = tmp_path / "s"
    tgt = tmp_path / "t"
    src.write_text(" ".join(f"s{k}" for k in range(n)) + "\n"
                   + "".join(a + "\n" for a, _ in short), encoding="utf-8")
    tgt.write_text(" ".join(f"t{k}" for k in range(n)) + "\n"
                   + "".join(b + "\n" for _, b in short), encoding="utf-8")
    out = tmp_path / "o"
    assert main(["align", "-s", str(src), "-t", str(tgt), "-o", str(out), "--model", "hmm",
                 "--ibm1-iterations", "3", "--hmm-iterations", "1", "--quiet"]) == 0
    first = links(out)[0]
    assert all(0 <= i < n and 0 <= j < n for i, j in first)
    assert sum(i == j for i, j in first) > 0.9 * n


def test_align_train_save_and_load_import_no_lightning_and_no_training(tmp_path):
    """House layering: `aligners align` (train + save, then --load-model) never imports
    Lightning or aligners.training (checked in a fresh interpreter)."""
    import subprocess
    import sys

    s, t, _, _ = write_corpus(tmp_path, n=20)
    m = tmp_path / "m"
    code = (
        "import sys\n"
        "from aligners.cli import main\n"
        f"assert main(['align', '-s', {str(s)!r}, '-t', {str(t)!r}, '-o', {str(tmp_path / 'a')!r},"
        f" '--save-model', {str(m)!r}, *{FAST!r}]) == 0\n"
        f"assert main(['align', '-s', {str(s)!r}, '-t', {str(t)!r}, '-o', {str(tmp_path / 'b')!r},"
        f" '--load-model', {str(m)!r}, '--quiet']) == 0\n"
        "bad = [k for k in sys.modules if k.split('.')[0] in ('pytorch_lightning', 'lightning')"
        " or k.startswith('aligners.training')]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text() != ""


def test_a_100k_token_pair_is_left_unaligned_with_a_warning_in_little_memory(tmp_path):
    """Issue 12.1: a 100k-token line pair gets an empty output line and one warning naming
    its line; the other lines keep their places; the run stays small (peak RSS < 1.5 GB)."""
    import subprocess
    import sys

    s, t, src, tgt = write_corpus(tmp_path, n=20)
    lines_s = s.read_text(encoding="utf-8").splitlines()
    lines_t = t.read_text(encoding="utf-8").splitlines()
    huge = " ".join(f"w{k % 5000}" for k in range(100_000))
    lines_s.insert(4, huge)
    lines_t.insert(4, huge)
    s.write_text("\n".join(lines_s) + "\n", encoding="utf-8")
    t.write_text("\n".join(lines_t) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    # VmHWM is this process's own peak: ru_maxrss would carry over the forking parent's
    # (pytest's) peak across exec on Linux
    code = ("import re, sys; from aligners.cli import main; rc = main(sys.argv[1:]); "
            "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1); "
            "print('MAXRSS', hwm); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "align", "-s", str(s), "-t", str(t),
                           "-o", str(out), *FAST], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    warnings = [x for x in proc.stderr.splitlines() if "warning" in x]
    assert len(warnings) == 1 and "line 5:" in warnings[0] and "100000" in warnings[0]
    got = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(got) == 21 and got[4] == ""
    short = links(out)
    assert sum(bool(x) for x in short) >= 15  # the other lines are aligned, in place
    for n, a in enumerate(short[:4] + short[5:]):
        for i, j in a:
            assert i < len(src[n]) and j < len(tgt[n])
    rss_kb = int(proc.stdout.split("MAXRSS")[1].split()[0])
    assert rss_kb < 1_500_000
