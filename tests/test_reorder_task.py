"""The `reorder` Hydra task end to end on tiny files, and extraction on the shipped Hansards."""

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from aligners.data.paths import data_root
from aligners.phrases import extract_phrase_pairs, load_corpus
from aligners.training.reorder import evaluate, train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _files(tmp_path, n=30):
    src = ["the house is red", "a b c", "the red house", "we go home ."]
    tgt = ["la maison est rouge", "x y", "la maison rouge", "nous rentrons ."]
    ali = ["0-0 1-1 2-2 3-3", "0-0 2-1", "0-0 2-1 1-2", "0-0 1-1 2-1 3-2"]
    out = {}
    for name, lines in (("src", src), ("tgt", tgt), ("ali", ali)):
        out[name] = tmp_path / f"toy.{name}"
        out[name].write_text("\n".join(lines * (n // 4 + 1)) + "\n")
    return out


def test_reorder_task_runs_all_models(tmp_path):
    files = _files(tmp_path)
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[
            "experiment=reorder_wmt",
            f"data.src={files['src']}", f"data.tgt={files['tgt']}", f"data.align={files['ali']}",
            "data.train_limit=20", "model.features.min_count=1",
            "model.models.primal=true", "model.models.dual=true",
            "model.dual.eps=[0.1,1.0]", "model.primal.epochs=2",
            "model.naive_bayes.mi_fractions=[0.0,0.5]",
        ])
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(cfg):
        cfg.paths = {"data_root": None, "output_dir": str(tmp_path / "out")}
        cfg.progress = False
    results = train(cfg)
    assert results["data"]["sentence_pairs"] == 20
    assert results["data"]["train_pairs"] == 18  # last 10% of the pairs held out
    models = results["models"]
    assert set(models) == {"lexical", "nb_map", "nb_bayes", "primal", "dual_eps0.1",
                           "dual_eps1.0"}
    for rec in models.values():
        assert 0.0 <= rec["heldout_error"] <= 1.0
    assert models["lexical"]["moses_table_lines"] > 0
    assert [r["fraction_removed"] for r in results["mi_curve"]] == [0.0, 0.5]
    assert all(r["size_bytes"] > 0 for r in results["mi_curve"])
    out = tmp_path / "out"
    # the MI sweep's scratch model is gone: the run's models folder holds the exported ones only
    assert {p.name for p in (out / "models").iterdir()} == set(models)
    assert (out / "reorder_active_set.png").is_file()
    assert (out / "reorder_nb_feature_reduction.png").is_file()
    assert (out / "models" / "dual_eps0.1" / "features.json").is_file()
    saved = json.loads((out / "results.json").read_text())
    assert saved["models"]["primal"]["heldout_error"] == models["primal"]["heldout_error"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["heldout"]["primal_error"] == models["primal"]["heldout_error"]
    assert set(metrics["heldout"]) == {f"{k}_error" for k in models} | {"majority_error"}
    # evaluate really re-scores each saved model on the same held-out pairs
    for name in models:
        with open_dict(cfg):
            cfg.ckpt_path = str(out / "models" / name)
            cfg.paths.output_dir = str(tmp_path / f"eval_{name}")
        got = evaluate(cfg)["heldout"]
        assert got["phrase_pairs"] == results["data"]["test_examples"]
        assert got["error"] == pytest.approx(models[name]["heldout_error"], abs=1e-12), name
        assert (tmp_path / f"eval_{name}" / "metrics.json").is_file()
    # explicit test files: pairs 18-19 of the toy corpus are the held-out pairs above
    held = {}
    for key, name in (("test_src", "src"), ("test_tgt", "tgt"), ("test_align", "ali")):
        held[key] = tmp_path / f"held.{name}"
        held[key].write_text("".join(files[name].read_text().splitlines(True)[18:20]))
    with open_dict(cfg):
        cfg.ckpt_path = str(out / "models" / "nb_map")
        for key, path in held.items():
            cfg.data[key] = str(path)
    got = evaluate(cfg)["test"]
    assert got["phrase_pairs"] == results["data"]["test_examples"]
    assert got["error"] == pytest.approx(models["nb_map"]["heldout_error"], abs=1e-12)


def test_extraction_on_shipped_hansards_is_consistent():
    d = data_root() / "hansards-enfr-naacl2003"
    if not (d / "aligned" / "eflomal.train200k.gdfa.gz").is_file():
        pytest.skip("Hansards data not shipped here")
    corpus = load_corpus(str(d / "train/hansards.train200k.e.gz"),
                         str(d / "train/hansards.train200k.f.gz"),
                         str(d / "aligned/eflomal.train200k.gdfa.gz"), limit=40)
    n_pairs = 0
    for src, tgt, links in corpus:
        pairs = extract_phrase_pairs(links, src_len=len(src), tgt_len=len(tgt))
        for p in pairs:
            inside = [(i, j) for i, j in links
                      if p.src_start <= i < p.src_end and p.tgt_start <= j < p.tgt_end]
            crossing = [(i, j) for i, j in links
                        if (p.src_start <= i < p.src_end) != (p.tgt_start <= j < p.tgt_end)]
            assert inside and not crossing
            assert p.src_end - p.src_start <= 7 and p.tgt_end - p.tgt_start <= 7
        n_pairs += len(pairs)
    assert n_pairs > 100
