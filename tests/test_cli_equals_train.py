"""One pipeline: `python train.py experiment=X` and `aligners align` with the same settings
write byte-identical links on the same text, for every word family (the Europarl De-En
gold set: no bitext ships, so both train on its 100 pairs' own text; no tuning split, so
both decode with the family's default decoding)."""

from pathlib import Path

import pytest
from conftest import shared_path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from aligners.cli import main
from aligners.data.datasets import load
from aligners.run import train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

# family -> (experiment, its overrides, the same settings as `aligners align` options)
CASES = {
    "hmm": ("hmm_agreement_europarl_deen", ["model.ibm1_iterations=2", "model.hmm_iterations=2"],
            ["--model", "hmm", "--ibm1-iterations", "2", "--hmm-iterations", "2"]),
    "bayesian": ("efmaral_europarl_deen", ["model.rel_iterations=0.2", "model.n_samplers=2",
                                           "seed=3"],
                 ["--model", "bayesian", "--length", "0.2", "--samplers", "2", "--seed", "3"]),
    # no tuning split: the gappy model alone (no Table 1), the regimen of 100 pairs, lowercased
    "gappy-hsmm": ("bansal2011_europarl_deen",
                   ["model.start.ibm1_iterations=2", "model.start.hmm_iterations=2",
                    "model.phrasal.iterations=2"],
                   ["--model", "gappy-hsmm", "--lowercase", "--ibm1-iterations", "2",
                    "--hmm-iterations", "2", "--phrasal-iterations", "2"]),
}


def _run_task(tmp: Path, experiment: str, overrides: list[str]) -> None:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[f"experiment={experiment}", *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp)
    train(OmegaConf.create(OmegaConf.to_container(cfg, resolve=True)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_train_py_and_the_cli_write_the_same_links(name, tmp_path):
    shared_path("data", "europarl-deen-bicici")
    experiment, overrides, options = CASES[name]
    _run_task(tmp_path / "run", experiment, overrides)
    gold = load("europarl-deen", "test")
    src, tgt = tmp_path / "text.de", tmp_path / "text.en"
    src.write_text("".join(" ".join(p.src) + "\n" for p in gold), encoding="utf-8")
    tgt.write_text("".join(" ".join(p.tgt) + "\n" for p in gold), encoding="utf-8")
    out = tmp_path / "cli.align"
    assert main(["align", "-s", str(src), "-t", str(tgt), "-o", str(out), "--quiet",
                 "--device", "cpu", *options]) == 0
    by_task = (tmp_path / "run" / "alignments.test.txt").read_bytes()
    assert by_task == out.read_bytes()
    assert len(by_task.splitlines()) == len(gold) and by_task.count(b"-") > 100
