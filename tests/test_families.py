"""Every registered family has one consistent record, and every word family goes through the
one pipeline: fit -> save -> aligners.load -> align, the CLI choice, and the Python API, with
the same links everywhere (tiny toy corpus; fast settings)."""

import dataclasses
import importlib
import io
from contextlib import redirect_stdout

import pytest
from word_toy import toy_corpus

import aligners
from aligners.cli import COMMANDS, main
from aligners.families import by_kind, by_task, families, family
from aligners.models.aligned import WordAlignment, auto_family
from aligners.run import tasks

WORD = [f.name for f in families("align")]

# each word family's fast settings: (aligners.align keyword options, the same as CLI flags)
FAST = {
    "hmm": ({"config": "WordAlignConfig(ibm1_iterations=2, hmm_iterations=2, max_jump=3)"},
            ["--ibm1-iterations", "2", "--hmm-iterations", "2", "--max-jump", "3"]),
    "gappy-hsmm": ({"config": "GappyHSMMConfig(start=WordAlignConfig(ibm1_iterations=2, "
                              "hmm_iterations=2, agreement=False, max_jump=3), "
                              "phrasal=PhrasalConfig(iterations=2), "
                              "sized=('phrasal.p0', 'phrasal.min_count', "
                              "'phrasal.gappy_min_count'))"},
                   ["--ibm1-iterations", "2", "--hmm-iterations", "2", "--max-jump", "3",
                    "--phrasal-iterations", "2"]),
    "bayesian": ({"config": "BayesConfig(rel_iterations=0.2, n_samplers=2)"},
                 ["--length", "0.2", "--samplers", "2"]),
}


def _config(name: str):
    """The FAST config object of family `name` (evaluated in its config module)."""
    fam = family(name)
    module = importlib.import_module(fam.config.partition(":")[0])
    return eval(FAST[name][0]["config"], vars(module))  # noqa: S307 (test table above)


def test_every_record_is_consistent():
    names = [f.name for f in families()]
    assert len(names) == len(set(names)) >= 6
    kinds = [k for f in families() for k in f.all_kinds]
    assert len(kinds) == len(set(kinds))
    known = tasks()
    for f in families():
        assert f.verb in COMMANDS, f.name
        assert by_kind(f.kind) is f and by_task(f.task_name) is f
        module = importlib.import_module(f"aligners.training.{known[f.task_name]}")
        assert callable(module.train) and callable(module.evaluate), f.name
        if f.config is not None:
            assert dataclasses.is_dataclass(f.config_class()), f.name
        target = f.loader or f"{f.model}.from_folder"
        assert callable(aligners.families.resolve(target)), f.name


@pytest.mark.parametrize("name", WORD)
def test_word_family_shape(name):
    fam = family(name, verb="align")
    cls = fam.model_class()
    assert issubclass(cls, WordAlignment) and cls.family == name
    options = importlib.import_module(fam.config.partition(":")[0])
    assert callable(options.add_arguments) and callable(options.from_args)
    assert options.DECODING.method in options.METHODS and cls.DEFAULT == options.DECODING
    assert name in FAST, f"add the fast settings of family {name!r} to FAST"


def _cli(argv) -> list[str]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue().splitlines()


def _as_links(lines):
    return [[tuple(int(x) for x in tok.split("-")) for tok in line.split()] for line in lines]


@pytest.mark.parametrize("name", WORD)
def test_fit_save_load_align_is_one_pipeline(name, tmp_path):
    src, tgt = toy_corpus(50, 3)
    s, t = tmp_path / "c.src", tmp_path / "c.tgt"
    s.write_text("".join(" ".join(x) + "\n" for x in src), encoding="utf-8")
    t.write_text("".join(" ".join(x) + "\n" for x in tgt), encoding="utf-8")
    flags = ["--model", name, *FAST[name][1], "--quiet"]
    trained = _cli(["align", "-s", str(s), "-t", str(t), "--save-model",
                    str(tmp_path / "m"), *flags])
    # the one-line API trains the same model and gives what the CLI printed
    api = aligners.align([" ".join(x) for x in src], tgt, model=name, config=_config(name))
    assert api == _as_links(trained)
    assert sum(map(len, api)) > len(src)  # it does align
    # a loaded model aligns new text exactly as `aligners align --load-model`
    loaded = aligners.load(tmp_path / "m")
    assert isinstance(loaded, family(name).model_class())
    new_src, new_tgt = toy_corpus(8, 11)
    n_s, n_t = tmp_path / "n.src", tmp_path / "n.tgt"
    n_s.write_text("".join(" ".join(x) + "\n" for x in new_src), encoding="utf-8")
    n_t.write_text("".join(" ".join(x) + "\n" for x in new_tgt), encoding="utf-8")
    by_cli = _cli(["align", "-s", str(n_s), "-t", str(n_t), "--load-model",
                   str(tmp_path / "m"), "--quiet"])
    fresh = aligners.load(tmp_path / "m")  # (the Bayesian model's counts grow with new text)
    assert fresh.align(new_src, new_tgt) == _as_links(by_cli)
    post = aligners.load(tmp_path / "m").posteriors(new_src, new_tgt)
    assert [sorted(p) for p in post] == _as_links(by_cli)
    assert all(0.0 <= v <= 1.0 for p in post for v in p.values())


def test_auto_picks_by_size_and_says_so(tmp_path, capsys, monkeypatch):
    from aligners.commands import _device
    from aligners.models.aligned import LARGE

    assert auto_family("cpu", 20) == ("bayesian", "auto: 20 pairs < 500,000")
    assert auto_family("cpu", None)[0] == "bayesian"  # stdin: size unknown
    assert auto_family("cpu", LARGE)[0] == auto_family("cuda", 2 * LARGE)[0] == "hmm"
    name, why = auto_family("cuda", 1000)  # a GPU: still the CPU sampler below LARGE
    assert name == "bayesian" and "--model hmm runs on cuda, faster and less accurate" in why
    monkeypatch.setattr(_device, "gpu_present", lambda: False)
    assert _device.auto_device("auto") == ("cpu", "auto: no GPU")
    assert _device.auto_device("cuda:1") == ("cuda:1", "--device cuda:1")
    monkeypatch.setattr(_device, "gpu_present", lambda: True)
    assert _device.auto_device("auto") == ("cuda", "auto: a GPU is present")
    monkeypatch.undo()
    src, tgt = toy_corpus(20, 1)
    s, t = tmp_path / "c.src", tmp_path / "c.tgt"
    s.write_text("".join(" ".join(x) + "\n" for x in src), encoding="utf-8")
    t.write_text("".join(" ".join(x) + "\n" for x in tgt), encoding="utf-8")
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(tmp_path / "o"),
                 *FAST["bayesian"][1]]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("aligners align: 20 sentence pairs aligned, model bayesian "
                              "(auto: 20 pairs < 500,000), device cpu ("), err[-1]
    # an option of another family is refused before any work, naming the fix
    assert main(["align", "-s", str(s), "-t", str(t), "--p0", "0.2"]) == 2
    err = capsys.readouterr().err
    assert "--p0 is an option of --model hmm" in err and "add --model hmm" in err


def test_gappy_regimen_follows_the_corpus_size():
    from aligners.models.gappy_hsmm.config import GappyHSMMConfig

    small, mid, big = (GappyHSMMConfig().for_pairs(n) for n in (1_000, 20_000, 200_000))
    assert (small.start.ibm1_iterations, small.start.hmm_iterations) == (5, 4)
    assert (small.phrasal.p0, small.phrasal.iterations, small.phrasal.min_count) == (0.2, 5, 1)
    assert (mid.phrasal.min_count, mid.phrasal.gappy_min_count) == (5, 10)
    assert (big.start.ibm1_iterations, big.phrasal.iterations) == (3, 2)
    kept = GappyHSMMConfig(sized=("phrasal.p0",)).for_pairs(200_000)
    assert kept.phrasal.iterations == 5 and kept.phrasal.p0 == 0.2  # only `sized` changes


def test_an_explicit_gpu_device_picks_the_family_that_runs_there():
    """`--device cuda` without --model: the HMM (the Bayesian sampler is CPU code); the
    device picked by `auto` keeps the size rule."""
    import argparse

    from aligners.commands.align import _family

    args = argparse.Namespace(load_model=None, model=None, device="cuda", input=None,
                              source=None)
    fam, why = _family(args)
    assert fam.name == "hmm" and "--device cuda" in why
    assert _family(args, picked=True)[0].name == "bayesian"
