"""Issue 25's sweep, kept as a test: bad inputs through the REAL entry points (`python -m
aligners.cli`, `train.py`, `evaluate.py`, `python -m aligners.applications`), each in a fresh
copy of a small world folder. Every case checks the exit status, exactly the expected stderr
lines (one, naming the problem; never a traceback), and that the world is unchanged: every
file's bytes and every link as before (inputs intact), nothing added but the case's declared
outputs (no partial output, no temporary file, no run or model folder).

To grow it, add a `Case` to `CASES` (or a `Sigint` to `SIGINTS`): `argv` is relative to the
world folder (the working directory), `{W}` stands for its absolute path; `memory_gb` runs a
case under an address-space limit. Issue 36 (round 2) added its 20 items: the cases, and the
tests after them for what is not one command line (the Python API, defaults, docs).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = {"cli": ["-m", "aligners.cli"], "applications": ["-m", "aligners.applications"],
           "train.py": [str(ROOT / "train.py")], "evaluate.py": [str(ROOT / "evaluate.py")]}


@dataclass(frozen=True)
class Case:
    """One run: `entry` + `argv`; expected exit status `rc`, `lines` stderr lines, the first
    holding `needle`; `stdout` a file stdout goes to; `new` the world paths the run may add
    (checked to exist); `stub_transformers`: a `transformers` that cannot be imported."""

    name: str
    argv: tuple[str, ...]
    rc: int = 2
    needle: str = ""
    entry: str = "cli"
    stdout: str | None = None
    lines: int = 1
    new: tuple[str, ...] = ()
    stub_transformers: bool = False
    needs_data: bool = False
    no_gpu: bool = False  # the case needs a machine where torch sees no GPU
    memory_gb: int | None = None  # run under this address-space limit (ulimit -v)


C = Case
GOLD = ("-i", "gold.pharaoh")
SYM = ("symmetrize", "-c", "union", "-i", "fwd.align", "-j", "rev.align")
CORPUS = ("-s", "c.en", "-t", "c.fr", "-a", "c.align", "-q")
MONO = ("monoalign", "--model", "phrase", "-i", "pairs.txt")
ALIGN = ("align", "-s", "c.en", "-t", "c.fr", "-q", "--model", "hmm", "--ibm1-iterations", "1",
         "--hmm-iterations", "1")
ALIGN_B = ("align", "-s", "c.en", "-t", "c.fr", "-q", "--model", "bayesian", "--length", "0.2")
CASES = [
    # an output equal to an input (issue 25 item 1) and other unwritable outputs
    C("convert-o-is-input", ("convert", *GOLD, "-o", "gold.pharaoh"), needle="also an input"),
    C("convert-o-symlink-to-input", ("convert", *GOLD, "-o", "link.pharaoh"),
      needle="also an input"),
    C("convert-o-absolute-path-of-input", ("convert", *GOLD, "-o", "{W}/./gold.pharaoh"),
      needle="also an input"),
    C("convert-o-hard-link-of-input", ("convert", *GOLD, "-o", "hard.pharaoh"),
      needle="also an input"),
    C("convert-o-dev-full", ("convert", *GOLD, "-o", "/dev/full"), needle="cannot write"),
    C("convert-o-proc-version", ("convert", *GOLD, "-o", "/proc/version"),
      needle="cannot write"),
    C("convert-o-folder", ("convert", *GOLD, "-o", "user"), needle="is a folder"),
    C("convert-o-missing-folder", ("convert", *GOLD, "-o", "no/such.txt"),
      needle="does not exist"),
    C("convert-stdout-full", ("convert", *GOLD), stdout="/dev/full", needle="stdout"),
    C("convert-o-gz", ("convert", *GOLD, "-o", "out.gz"), rc=0, lines=0, new=("out.gz",)),
    C("symmetrize-o-is-input", (*SYM, "-o", "fwd.align"), needle="also an input"),
    C("symmetrize-o-dev-full", (*SYM, "-o", "/dev/full"), needle="cannot write"),
    C("symmetrize-stdout-full", SYM, stdout="/dev/full", needle="stdout"),
    C("symmetrize-o-dev-null", (*SYM, "-o", "/dev/null"), rc=0, lines=0),
    C("evaluate-stdout-full", ("evaluate", "--gold", "gold.pharaoh", "--test", "fwd.align"),
      stdout="/dev/full", needle="stdout"),
    C("classify-model-of-another-kind", ("classify", "--model", "phrase", "--input", "pairs.tsv"),
      needle="not for `aligners classify`"),
    C("classify-blank-line", ("classify", "--model", "lclr_model", "--input", "blank.tsv"),
      needle="blank.tsv:2: expected 'text1<TAB>text2'"),
    C("show-stdout-full", ("show", "-s", "c.en", "-t", "c.fr", "-a", "c.align"),
      stdout="/dev/full", needle="stdout"),
    C("show-html-is-input", ("show", "-s", "c.en", "-t", "c.fr", "-a", "c.align", "--html",
                             "c.align"), needle="also an input"),
    C("show-html-dev-full", ("show", "-s", "c.en", "-t", "c.fr", "-a", "c.align", "--html",
                             "/dev/full"), needle="cannot write"),
    # conflicting options are errors (issue 36 item 14)
    C("convert-i-and-dataset", ("convert", *GOLD, "--dataset", "hansards-enfr"),
      needle="--dataset"),
    C("convert-split-without-dataset", ("convert", *GOLD, "--split", "test"),
      needle="--split"),
    C("align-load-model-training-option", ("align", "-s", "c.en", "-t", "c.fr", "--load-model",
                                           "hmm_model", "--ibm1-iterations", "3"),
      needle="--ibm1-iterations is a training option"),
    C("monoalign-stdout-full", MONO, stdout="/dev/full", needle="stdout"),
    C("monoalign-threads-100000", (*MONO, "--threads", "100000", "-q"), rc=0,
      needle="more than the"),
    # a documented token limit bounds the memory (issue 36 item 4), under a memory limit
    C("monoalign-5000-token-pair", (*MONO[:-1], "huge.pairs", "-q"), rc=0,
      needle="line 2: 5000 x 5000 tokens, over the 256-token limit", memory_gb=4),
    C("monoalign-out-of-memory", (*MONO[:-1], "huge.pairs", "-q", "--max-tokens", "6000"),
      rc=1, needle="out of memory", memory_gb=4),
    C("monoalign-int8-on-token-crf", ("monoalign", "--model", "token", "-i", "pairs.txt",
                                      "--encoder-precision", "int8"), needle="neural aligner only"),
    C("monoalign-threshold-above-1", (*MONO, "--decode", "posterior", "--threshold", "7"),
      needle="--threshold"),
    C("reorder-extract-o-is-input", ("reorder", "extract", *CORPUS, "-o", "c.align"),
      needle="also an input"),
    C("reorder-extract-o-dev-null", ("reorder", "extract", *CORPUS, "-o", "/dev/null"), rc=0,
      needle="phrase pairs"),
    C("reorder-extract-o-dev-full", ("reorder", "extract", *CORPUS, "-o", "/dev/full"),
      needle="cannot write"),
    C("reorder-extract-o-proc-version", ("reorder", "extract", *CORPUS, "-o", "/proc/version"),
      needle="cannot write"),
    C("reorder-predict-o-is-input", ("reorder", "predict", *CORPUS, "-m", "reorder_model",
                                     "-o", "c.en"), needle="also an input"),
    C("reorder-predict-o-dev-full", ("reorder", "predict", *CORPUS, "-m", "reorder_model",
                                     "-o", "/dev/full"), needle="cannot write"),
    # a model folder over the user's files (item 2)
    C("reorder-train-o-user-folder", ("reorder", "train", *CORPUS, "-o", "user"),
      needle="not a model folder"),
    C("reorder-train-o-current-folder", ("reorder", "train", *CORPUS, "-o", "."),
      needle="current folder"),
    C("reorder-train-o-folder-holding-inputs", ("reorder", "train", "-s", "corpus/c.en", "-t",
                                                "c.fr", "-a", "c.align", "-o", "corpus"),
      needle="holds -s"),
    C("reorder-train-o-input-file", ("reorder", "train", *CORPUS, "-o", "c.en"),
      needle="-o: is -s c.en"),
    C("reorder-train-moses-table-is-input", ("reorder", "train", *CORPUS, "--model", "lexical",
                                             "--moses-table", "c.fr", "-o", "new_model"),
      needle="also an input"),
    # a model folder of another family (issue 36 item 1) or one of the run's outputs (item 3)
    C("reorder-train-o-word-model", ("reorder", "train", *CORPUS, "-o", "hmm_model"),
      needle="holds a 'hmm' model"),
    C("reorder-train-o-word-model-overwrite", ("reorder", "train", *CORPUS, "--min-count", "1",
                                               "-o", "hmm_model", "--overwrite"), rc=0,
      needle="features ->", new=("hmm_model",)),
    C("reorder-train-o-is-moses-table", ("reorder", "train", *CORPUS, "--model", "lexical",
                                         "--moses-table", "table", "-o", "table"),
      needle="is --moses-table"),
    C("reorder-limit-0", ("reorder", "extract", *CORPUS, "--limit", "0"), needle="--limit"),
    C("reorder-train-replaces-its-model", ("reorder", "train", *CORPUS, "--min-count", "1",
                                           "-o", "reorder_model"), rc=0, needle="features ->",
      new=("reorder_model",)),
    # aligners align, every family: the same rules
    C("align-o-is-input", (*ALIGN, "-o", "c.en"), needle="also an input"),
    C("align-bayesian-o-is-input", (*ALIGN_B, "-o", "c.fr"), needle="also an input"),
    C("align-f-is-r", (*ALIGN, "-f", "x.align", "-r", "x.align"), needle="also an output"),
    C("align-save-model-user-folder", (*ALIGN, "--save-model", "user"),
      needle="not a model folder"),
    C("align-save-model-current-folder", (*ALIGN, "--save-model", "."),
      needle="current folder"),
    C("align-save-model-over-mono-model", (*ALIGN, "--save-model", "phrase"),
      needle="holds a 'mono-phrase-crf' model"),
    C("align-save-model-over-lclr-model", (*ALIGN, "--save-model", "lclr_model"),
      needle="holds a 'lclr' model"),
    C("align-save-model-replaces-its-model", (*ALIGN, "-o", "o.align", "--save-model",
                                              "hmm_model"), rc=0, lines=0,
      new=("hmm_model", "o.align")),
    C("align-o-gz", (*ALIGN, "-o", "out.gz"), rc=0, lines=0, new=("out.gz",)),
    C("align-o-dev-full", (*ALIGN, "-o", "/dev/full"), needle="cannot write"),
    C("align-stdout-full", ALIGN, stdout="/dev/full", needle="stdout"),
    C("align-threads-100000", (*ALIGN, "-o", "/dev/null", "--threads", "100000"), rc=0,
      needle="more than the"),
    C("align-seed-negative", (*ALIGN_B, "--seed", "-5"), needle="--seed"),
    # iteration counts are bounded (issue 36 item 5); argument errors are one line too
    C("align-hmm-iterations-1e9", (*ALIGN, "--hmm-iterations", "1000000000"),
      needle="--hmm-iterations must be an integer in [0, 1000]; got 1000000000"),
    C("align-bayesian-length-1e9", (*ALIGN_B, "--length", "1e9"),
      needle="--length must be a number in (0, 100]"),
    C("reorder-train-max-iter-1e9", ("reorder", "train", *CORPUS, "--model", "dual",
                                     "--max-iter", "1000000000", "-o", "m"),
      needle="--max-iter must be an integer in [1, 1000]"),
    C("train-hmm-iterations-1e9", ("experiment=default", "model.hmm_iterations=1000000000",
                                   "hydra.run.dir=run"), entry="train.py",
      needle="model.hmm_iterations must be an integer in [0, 1000]"),
    C("align-cache-dir-read-only", (*ALIGN, "--cache-dir", "/proc/aligners-cache"),
      needle="--cache-dir: cannot write"),
    C("align-cache-dir-is-a-file", (*ALIGN, "--cache-dir", "c.en"), needle="--cache-dir"),
    C("align-symmetrize-bogus", (*ALIGN, "--decoding", "posterior", "--symmetrize", "bogus"),
      needle="--symmetrize must be one of none, intersect"),
    C("align-option-of-another-family", ("align", "-s", "c.en", "-t", "c.fr", "--p0", "0.2"),
      needle="--p0 is an option of --model hmm"),
    C("align-empty-bitext", ("align", "-s", "e.en", "-t", "e.fr", "--model", "hmm"),
      needle="no sentence pairs"),
    C("align-bayesian-empty-bitext", ("align", "-s", "e.en", "-t", "e.fr", "--model",
                                      "bayesian"), needle="no sentence pairs"),
    C("align-saved-threshold-7", ("align", "-s", "c.en", "-t", "c.fr", "--load-model",
                                  "bad_threshold_model"), needle="threshold"),
    C("align-bayesian-overlong-line", ("align", "-s", "long.en", "-t", "long.fr", "-q",
                                       "--model", "bayesian", "--length", "0.2", "-o",
                                       "o.align"), rc=0, needle="left unaligned",
      new=("o.align",)),
    C("applications-word-model", ("--model", "word_model"), entry="applications",
      needle="expected a monolingual model"),
    C("applications-out-unwritable", ("--model", "phrase", "--out", "/proc/results.json"),
      entry="applications", needle="cannot write"),
    # Hydra entry points
    C("train-unknown-experiment", ("experiment=nope",), entry="train.py", needle="no experiment"),
    C("train-base-experiment", ("experiment=yao2013_common",), entry="train.py",
      needle="base config"),
    C("evaluate-base-experiment", ("experiment=neural_common",), entry="evaluate.py",
      needle="base config"),
    C("aligners-train-unknown-experiment", ("train", "experiment=nope"), needle="no experiment"),
    C("train-run-dir-in-proc", ("experiment=diagonal_baseline", "hydra.run.dir=/proc/xyz"),
      entry="train.py", needle="hydra.run.dir"),
    C("train-max-epochs", ("experiment=diagonal_baseline", "trainer.max_epochs=0"),
      entry="train.py", needle="trainer.max_epochs"),
    C("train-threshold-above-1", ("experiment=default", "model.decoding.threshold=5",
                                  "hydra.run.dir=run"), entry="train.py",
      needle="model.decoding.threshold"),
    # a run folder is never mixed (issue 36 item 2)
    C("train-run-dir-holds-earlier-run", ("experiment=diagonal_baseline",
                                          "hydra.run.dir=oldrun"), entry="train.py",
      needle="holds an earlier run"),
    C("train-run-dir-user-folder", ("experiment=diagonal_baseline", "hydra.run.dir=user"),
      entry="train.py", needle="not a run folder"),
    C("train-run-dir-user-folder-overwrite", ("experiment=diagonal_baseline",
                                              "hydra.run.dir=user", "overwrite=true"),
      entry="train.py", needle="not a run folder"),
    C("train-run-dir-overwrite", ("experiment=diagonal_baseline", "hydra.run.dir=oldrun",
                                  "overwrite=true"), entry="train.py", rc=0, lines=0,
      new=("oldrun",), needs_data=True),
    # Hydra's own errors, conflicts and limits: one line, exit 2 (items 10-14)
    *(C(f"train-hydra-{name}", (arg, "hydra.run.dir=run"), entry="train.py", needle=needle)
      for name, arg, needle in (
          ("override-syntax", "model.p0=[1,", "no viable alternative"),
          ("unknown-key", "foo=bar", "Could not override 'foo'"),
          ("unknown-trainer", "trainer=foo", "Could not find 'trainer/foo'"),
          ("unknown-model", "model=nope", "Could not find 'model/nope'"),
          ("key-not-in-model", "model.l2=-1", "Could not override 'model.l2'"))),
    C("evaluate-hydra-unknown-key", ("foo=bar",), entry="evaluate.py",
      needle="Could not override 'foo'"),
    C("train-experiment-twice", ("experiment=default", "experiment=diagonal_baseline"),
      entry="train.py", needle="experiment is given twice"),
    C("train-negative-train-limit", ("experiment=default", "data.train_limit=-1",
                                     "hydra.run.dir=run"), entry="train.py",
      needle="data.train_limit"),
    C("train-train-limit-0", ("experiment=default", "data.train_limit=0", "hydra.run.dir=run"),
      entry="train.py", needle="data.train_limit must be an integer >= 1 or null"),
    C("train-gpu-without-gpu", ("experiment=diagonal_baseline", "trainer=gpu",
                                "hydra.run.dir=run"), entry="train.py", needle="no CUDA GPU",
      no_gpu=True),
    C("train-lclr-empty-C-grid", ("experiment=lclr_paraphrase", "model.C_grid=[]",
                                  "hydra.run.dir=run"), entry="train.py",
      needle="model.C_grid must be a non-empty list", needs_data=True),
    C("train-neural-without-transformers", ("experiment=neural_msr06", "hydra.run.dir=run"),
      entry="train.py", needle="pip install -e '.[neural]'", stub_transformers=True,
      needs_data=True),
]


@dataclass(frozen=True)
class Sigint:
    """A run interrupted by SIGINT once `ready(world, seconds since start)`: exit 130, one
    stderr line `...interrupted...`, nothing added but `new` (a marked run folder)."""

    name: str
    entry: str
    argv: tuple[str, ...]
    ready: object
    new: tuple[str, ...] = field(default=())


def _tmp_file_written(world: Path, _elapsed: float) -> bool:
    return any(p.stat().st_size > 0 for p in world.glob(".out.txt.*.tmp"))


def _after(seconds: float):
    return lambda _world, elapsed: elapsed > seconds


def _run_started(world: Path, elapsed: float) -> bool:
    return (world / "run" / ".hydra").is_dir() and elapsed > 4


BIG = ("-s", "big.en", "-t", "big.fr", "-a", "big.align", "-q")
SIGINTS = [
    Sigint("align", "cli", ("align", "--model", "hmm", "-s", "big.en", "-t", "big.fr", "-o",
                            "out.txt", "--ibm1-iterations", "60", "--hmm-iterations", "60"),
           _after(6)),  # (the index and 10 EM iterations take ~5 s: make training long)
    Sigint("align-bayesian", "cli", ("align", "-s", "big.en", "-t", "big.fr", "-o", "out.txt",
                                     "--length", "20"),
           _after(6)),  # (the default schedule samples these 20k pairs in ~5 s)
    Sigint("monoalign", "cli", ("monoalign", "--model", "phrase", "-i", "big.pairs"),
           _after(6)),
    Sigint("reorder-extract", "cli", ("reorder", "extract", *BIG, "-o", "out.txt"),
           _tmp_file_written),
    Sigint("reorder-train", "cli", ("reorder", "train", *BIG, "--model", "dual", "-o", "m"),
           _after(6)),
    Sigint("train.py", "train.py", ("experiment=default", "hydra.run.dir=run"), _run_started,
           new=("run",)),
]


# ------------------------------------------------------------------ the world


def _write(path: Path, lines) -> None:
    path.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """Small inputs, model folders of each kind the cases use, a user's folder."""
    from aligners.cli import main
    from aligners.export import write_model
    from aligners.models.mono.aligner import MonoAligner, build_model

    w = tmp_path_factory.mktemp("world")
    _write(w / "gold.pharaoh", ["0-0 1-1", "0-0", "1-0 2-1"])
    _write(w / "fwd.align", ["0-0 1-1", "0-0", "1-0"])
    _write(w / "rev.align", ["0-0", "0-0", "1-0 2-1"])
    (w / "link.pharaoh").symlink_to("gold.pharaoh")
    os.link(w / "gold.pharaoh", w / "hard.pharaoh")
    _write(w / "pairs.txt", ["the cat sat ||| a cat is sitting", "he left ||| he went away"])
    _write(w / "pairs.tsv", ["the cat sat\ta cat is sitting"])
    _write(w / "blank.tsv", ["the cat sat\ta cat is sitting", "\t", "he left\the went"])
    src = ["the house", "a b c", "the red house", "the house"] * 5
    tgt = ["la maison", "x y", "la maison rouge", "la maison"] * 5
    ali = ["0-0 1-1", "0-0 2-1", "0-0 2-1 1-2", "0-0 1-1"] * 5
    for name, lines in (("c.en", src), ("c.fr", tgt), ("c.align", ali)):
        _write(w / name, lines)
    (w / "corpus").mkdir()
    _write(w / "corpus" / "c.en", src)
    (w / "user").mkdir()
    _write(w / "user" / "notes.txt", ["precious"])
    _write(w / "e.en", [])
    _write(w / "e.fr", [])
    _write(w / "long.en", [*src[:3], " ".join(["w"] * 3000), *src[:3]])
    _write(w / "long.fr", [*tgt[:3], " ".join(["v"] * 3000), *tgt[:3]])
    _write(w / "huge.pairs", ["the cat sat ||| a cat", " ".join(["w"] * 5000) + " ||| "
                              + " ".join(["v"] * 5000), "he left ||| he went"])
    for name, threshold in (("hmm_model", None), ("bad_threshold_model", 7)):
        assert main(["align", "-s", str(w / "c.en"), "-t", str(w / "c.fr"), "-q", "--model",
                     "hmm", "--ibm1-iterations", "1", "--hmm-iterations", "1",
                     "-o", os.devnull, "--save-model", str(w / name)]) == 0
        if threshold is not None:
            cfg = json.loads((w / name / "config.json").read_text())
            cfg["decoding"]["threshold"] = threshold
            (w / name / "config.json").write_text(json.dumps(cfg))
    torch.manual_seed(0)
    MonoAligner({"s2t": build_model(kind="phrase", max_src_len=2, max_tgt_len=2)},
                kind="phrase").save(w / "phrase")
    MonoAligner({"s2t": build_model(kind="token")}, kind="token").save(w / "token")
    write_model(w / "word_model", kind="word-aligner", tensors={"keys": torch.zeros(1)},
                config={})
    write_model(w / "lclr_model", kind="lclr", tensors={"w": torch.zeros(1)}, config={})
    (w / "oldrun" / ".hydra").mkdir(parents=True)  # an earlier train.py run
    _write(w / "oldrun" / ".hydra" / "overrides.yaml", ["- experiment=tokencrf_msr06"])
    _write(w / "oldrun" / "old_predictions.txt", ["0-0"])
    assert main(["reorder", "train", "-s", str(w / "c.en"), "-t", str(w / "c.fr"), "-a",
                 str(w / "c.align"), "--min-count", "1", "-q",
                 "-o", str(w / "reorder_model")]) == 0
    return w


def _world(template: Path, tmp_path: Path) -> Path:
    world = tmp_path / "world"
    shutil.copytree(template, world, symlinks=True)
    os.link(world / "gold.pharaoh", world / "hard.pharaoh.tmp")  # keep the hard link a link
    os.replace(world / "hard.pharaoh.tmp", world / "hard.pharaoh")
    return world


def _snapshot(world: Path) -> dict[str, str]:
    """relative path -> content hash / link target / "dir", for everything in `world`."""
    out = {}
    for p in sorted(world.rglob("*")):
        rel = str(p.relative_to(world))
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _env(stub: Path | None = None) -> dict[str, str]:
    from aligners.data.paths import data_root

    path = [str(stub)] if stub else []
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)]),
            "ALIGNERS_DATA": str(data_root())}


def _command(entry: str, argv, world: Path) -> list[str]:
    return [sys.executable, *ENTRIES[entry], *(a.replace("{W}", str(world)) for a in argv)]


def _stderr_lines(text: str) -> list[str]:
    assert "Traceback" not in text, text
    return [x for x in text.splitlines() if x.strip()]


def _check_world(before: dict, world: Path, new: tuple[str, ...]) -> None:
    after = _snapshot(world)
    added = {k for k in after if k not in before}
    allowed = {k for k in added if any(k == n or k.startswith(n + "/") for n in new)}
    assert added == allowed, f"left behind: {sorted(added - allowed)}"
    for n in new:
        assert n in after, f"{n} was not written"
    changed = [k for k, v in before.items() if after.get(k) != v
               and not any(k == n or k.startswith(n + "/") for n in new)]
    assert not changed, f"changed or removed: {changed}"


def _memory_limit(n_bytes: int):
    def apply():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (n_bytes, n_bytes))
    return apply


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sweep_case(case: Case, template, tmp_path):
    if case.needs_data:
        from tests.conftest import shared_path

        shared_path("data")
    if case.no_gpu and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    world = _world(template, tmp_path)
    stub = None
    if case.stub_transformers:
        stub = tmp_path / "stub"
        stub.mkdir()
        (stub / "transformers.py").write_text(
            "raise ModuleNotFoundError(\"No module named 'transformers'\", "
            "name='transformers')\n")
    before = _snapshot(world)
    limit = None if case.memory_gb is None else _memory_limit(case.memory_gb << 30)
    with open(case.stdout or os.devnull, "w") as stdout:
        res = subprocess.run(_command(case.entry, case.argv, world), cwd=world, env=_env(stub),
                             stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=600,
                             preexec_fn=limit)
    lines = _stderr_lines(res.stderr)
    assert res.returncode == case.rc, res.stderr
    assert len(lines) == case.lines, res.stderr
    if case.lines:
        assert case.needle in lines[0], lines[0]
        if case.rc == 2:
            assert ": error: " in lines[0], lines[0]
    _check_world(before, world, case.new)
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()
    if case.name == "train-run-dir-overwrite":  # replaced, not mixed
        assert not (world / "oldrun" / "old_predictions.txt").exists()
        assert (world / "oldrun" / "metrics.json").is_file()
        log = (world / "oldrun" / "train.log").read_text()  # the run's table (item 19)
        assert "AER" in log and "\r" not in log
    if case.name == "convert-o-gz":
        with gzip.open(world / "out.gz", "rt") as f:
            assert f.read() == "0-0 1-1\n0-0\n1-0 2-1\n"


@pytest.fixture(scope="module")
def big_template(template, tmp_path_factory) -> Path:
    """The world plus a corpus big enough that each interrupted run is still working."""
    w = tmp_path_factory.mktemp("big") / "world"
    shutil.copytree(template, w, symlinks=True)
    words = "the old red house on the hill is big".split()
    n = 20000
    _write(w / "big.en", [" ".join(words)] * n)
    _write(w / "big.fr", [" ".join(words[::-1])] * n)
    _write(w / "big.align", [" ".join(f"{i}-{len(words) - 1 - i}"
                                      for i in range(len(words)))] * n)
    _write(w / "big.pairs", [" ".join(words) + " ||| " + " ".join(words[::-1])] * n)
    return w


@pytest.mark.parametrize("case", SIGINTS, ids=[c.name for c in SIGINTS])
def test_sigint_is_one_line_exit_130_and_leaves_nothing(case: Sigint, big_template, tmp_path):
    if case.entry == "train.py":
        from tests.conftest import shared_path

        shared_path("data", "hansards-enfr-naacl2003")
    world = tmp_path / "world"
    shutil.copytree(big_template, world, symlinks=True)
    before = _snapshot(world)
    proc = subprocess.Popen(_command(case.entry, case.argv, world), cwd=world, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    try:
        while not case.ready(world, time.monotonic() - start):
            assert proc.poll() is None, f"finished before it was interrupted: {proc.stderr.read()}"
            assert time.monotonic() - start < 300, "never got to work"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = _stderr_lines(err)
    assert proc.returncode == 130, err
    assert len(lines) == 1 and "interrupted" in lines[0], err
    _check_world(before, world, case.new)
    if case.entry == "train.py":
        assert "FAILED" in lines[0]
        assert (world / "run" / "FAILED").read_text().startswith("interrupted")


def test_python_api_families_and_bare_strings(template):
    """Issue 36 items 16-17: `aligners.families()` keeps working after `aligners.load` (whose
    import makes `aligners.families` the module); a bare string where a list of sentences
    or pairs is expected is one AlignersInputError, never an alignment of characters."""
    import aligners
    from aligners.errors import AlignersInputError

    n = len(aligners.families())
    model = aligners.load(template / "phrase")
    assert len(aligners.families()) == n == len(aligners.families()) > 0
    assert [f.name for f in aligners.families("align")] == [
        f.name for f in aligners.families.families("align")]
    with pytest.raises(AlignersInputError, match="got one string"):
        aligners.align("the house", "la maison")
    with pytest.raises(AlignersInputError, match="got a string"):
        model.align("the cat sat ||| a cat")
    with pytest.raises(AlignersInputError, match="got a string"):
        model.align(("the cat", "a cat"))
    assert model.align([("the cat", "a cat")]) == model.align([(("the", "cat"), ("a", "cat"))])
    # one signature: align(sources, targets), or align(pairs), for every family
    assert model.align(["the cat"], ["a cat"]) == model.align([("the cat", "a cat")])
    word = aligners.load(template / "hmm_model")
    assert word.align(["the house", "a b c"], ["la maison", "x y"]) == word.align(
        [("the house", "la maison"), ("a b c", "x y")])
    with pytest.raises(AlignersInputError, match="got one string"):
        word.align("the house", "la maison")


def test_monoalign_leaves_an_overlong_pair_unaligned_in_place(template, capsys):
    """Issue 36 item 4: the pair over the token limit is an empty line, the others aligned."""
    from aligners.cli import main

    assert main(["monoalign", "--model", str(template / "phrase"), "-i",
                 str(template / "huge.pairs"), "-q", "--score"]) == 0
    out, err = capsys.readouterr()
    lines = out.split("\n")
    assert len(lines) == 4 and lines[3] == "" and lines[1] == "", out[:200]
    assert " ||| " in lines[0] and " ||| " in lines[2] and "over the 256-token limit" in err


def test_thread_defaults_never_oversubscribe(template, tmp_path, monkeypatch):
    """Issue 36 item 7: by default every command and train.py / evaluate.py use one torch
    thread (2 threads on a busy 2-core machine made the HMM 10-45x slower)."""
    import yaml

    from aligners.cli import _subparsers, build_parser, main
    from aligners.cli_types import from_options
    from aligners.models.aligned import RunOptions

    commands = _subparsers(build_parser())
    align = commands["align"].parse_args(["--model", "hmm"])  # unset: RunOptions' default
    assert align.threads is None and from_options(RunOptions, align).threads == 1
    assert commands["monoalign"].parse_args(["--model", "M"]).threads == 1
    for name in ("train", "evaluate"):
        doc = yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
        assert doc["threads"] == 1
    asked = []
    monkeypatch.setattr(torch, "set_num_threads", asked.append)
    assert main(["reorder", "train", "-s", str(template / "c.en"), "-t", str(template / "c.fr"),
                 "-a", str(template / "c.align"), "-q", "-o", str(tmp_path / "m")]) == 0
    assert asked and set(asked) == {1}


def test_bayesian_default_shows_progress_and_stops_on_request(capsys):
    """Issue 36 item 6: the default (Bayesian) aligner's sweeps drive a progress bar when
    progress is on (a terminal), and a stopped run raises KeyboardInterrupt at its next
    chunk in both directions (Ctrl-C stopped it in 0.7 s, was 107 s, at 100k pairs)."""
    from aligners.models.aligned import RunOptions
    from aligners.models.bayesian import BayesConfig
    from aligners.models.bayesian.folder import BayesianAlignment

    pairs = [("the house".split(), "la maison".split()), ("a house".split(), "une maison".split())]
    cfg = BayesConfig(iterations=[2, 2, 2], n_samplers=1)
    BayesianAlignment.fit(pairs, cfg, RunOptions(progress=True))
    err = capsys.readouterr().err
    assert "sampling (sweeps)" in err and "12/12" in err.replace(".0", "")

    import threading
    from collections import Counter

    class Interrupting:  # a Ctrl-C in one direction's thread at its 10th sweep
        def __init__(self, **_):
            self.calls, self.first = Counter(), None

        def update(self, n):
            me = threading.get_ident()
            self.first = self.first or me
            self.calls[me] += 1
            time.sleep(0.001)
            if me == self.first and self.calls[me] == 10:
                raise KeyboardInterrupt

        def close(self):
            pass

    from aligners.models.bayesian import BayesAligner

    bars = []
    with pytest.raises(KeyboardInterrupt):
        BayesAligner(BayesConfig(iterations=[200, 200, 200], n_samplers=1, threads=2)).align(
            pairs, bar=lambda **kw: bars.append(Interrupting()) or bars[-1])
    counts = sorted(bars[0].calls.values())
    assert len(counts) == 2 and counts[-1] < 300, counts  # the other one stopped too (not 600)


def test_docs_name_the_defaults_and_a_working_lclr_flow():
    """Issue 36 item 18: the docs and `aligners --help` name the default word model that
    `--model auto` picks (by corpus size), and the README's LCLR flow classifies with the
    task it trained, reading the run folder it wrote."""
    import re

    from aligners.cli import COMMANDS
    from aligners.models.aligned import LARGE, auto_family

    small, large = auto_family("cpu", LARGE - 1)[0], auto_family("cpu", LARGE)[0]
    usage = " ".join((ROOT / "docs" / "usage.md").read_text(encoding="utf-8").split())
    assert f"`{small}` below {LARGE:,} sentence pairs, `{large}` from there on" in usage
    for page in ("docs/usage.md", "docs/word.md"):
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        assert "`--model hmm` (default)" not in text and "the default)," not in text, page
    assert f"{small} below {LARGE:,} pairs, {large}" in COMMANDS["align"][1].lower()
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    flow = re.search(r"experiment=lclr_(\w+) hydra.run.dir=(\S+)`, then `aligners classify "
                     r"--task (\w+) --model (\S+)`", readme)
    assert flow and flow[1] == flow[3] and flow[4] == f"{flow[2]}/lclr"


def test_tests_keep_their_caches_out_of_home():
    """Issue 36 item 19: the parse cache of a test run is not ~/.cache/aligners (the
    conftest puts it under pytest's temporary folder through $ALIGNERS_CACHE)."""
    from aligners.features.parse import default_cache_dir

    assert default_cache_dir().resolve() != (Path.home() / ".cache" / "aligners").resolve()


def test_one_limit_key_with_one_meaning():
    """Issue 36 item 13: every task limits its training pairs with `data.train_limit`
    (never `data.limit`), and a limit is >= 1 or null everywhere (0 is refused)."""
    import yaml

    from aligners.config_checks import Common, check_value, rules_of
    from aligners.errors import AlignersInputError
    from aligners.models.reorder.config import ReorderData

    def keys(node, prefix=""):
        for k, v in (node.items() if isinstance(node, dict) else ()):
            yield f"{prefix}{k}"
            yield from keys(v, f"{prefix}{k}.")

    for f in sorted((ROOT / "configs").glob("*/*.yaml")):
        found = [k for k in keys(yaml.safe_load(f.read_text()) or {})
                 if k.split(".")[-1] == "limit"]
        assert not found, (f, found)
    for rule in (rules_of(Common)["data.train_limit"], rules_of(ReorderData)["train_limit"]):
        with pytest.raises(AlignersInputError, match="must be an integer >= 1 or null"):
            check_value("data.train_limit", 0, rule)


def test_overwrite_never_removes_the_current_folder(tmp_path, monkeypatch):
    """Issue 36 item 2: `overwrite=true` replaces an earlier run's folder, never the one the
    user is in (or one holding it)."""
    from aligners.errors import AlignersInputError
    from aligners.launch import check_argv

    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / "sub").mkdir()
    for cwd, given in ((run, "."), (run / "sub", "..")):
        monkeypatch.chdir(cwd)
        with pytest.raises(AlignersInputError, match="current folder"):
            check_argv([f"hydra.run.dir={given}", "overwrite=true"])
    assert (run / ".hydra").is_dir() and (run / "sub").is_dir()
