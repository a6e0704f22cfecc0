"""The phrasal / gappy HSMM aligner (Bansal, Quirk & Moore 2011) against the word HMM by
agreement: the paper's Table 1 shape, with CPU time per model and the pipeline / baseline
ratio; rows -> benchmarks/results/phrasal.json.

    python benchmarks/phrasal.py                                   # bansal2011_hansards (200k)
    python benchmarks/phrasal.py --experiment bansal2011_hansards_20k
    python benchmarks/phrasal.py --experiment bansal2011_hansards_20k --pairs 300 \\
        --set model.start.hmm_iterations=1 model.phrasal.iterations=1 --no-save   # a smoke run

Runs `python train.py experiment=EXP` (plus `data.train_limit=N` for --pairs, and the --set
overrides) as a child process under the harness (wall, CPU of the process tree, peak RSS)
in a temporary run folder, and turns its metrics.json into rows: the word HMM by agreement
(the baseline), + contiguous phrases, + gappy phrases (P / R / F1 / AER on the test pairs
after the paper's dev split, AER on all 447 with the trial-chosen decoding, dev AER, gappy
gold patterns fully right, CPU seconds of the model: metrics.json `run`), and the whole task.
pipeline / word CPU = (no-agreement start + gappy model) / the word HMM by agreement.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, add_output_args, machine, make_row, run_command, write_rows  # noqa: E402

__all__ = ["main", "rows_from_metrics"]

_MODELS = (("word_hmm_agreement", "word HMM by agreement", "word_hmm_agreement"),
           ("+contiguous", "+ contiguous phrases", "contiguous"),
           ("+gappy", "+ gappy phrases", "gappy"))


def _dataset(experiment: str, pairs: int | None) -> str:
    if pairs is not None:
        return f"hansards-{pairs // 1000}k" if pairs % 1000 == 0 else f"hansards-{pairs}"
    return "hansards-20k" if experiment.endswith("_20k") else "hansards-200k"


def rows_from_metrics(metrics: dict, dataset: str, run: dict, desc: str) -> list[dict]:
    """Result rows from the task's metrics.json (`metrics`) and the child's harness
    measurement (`run`: wall_s, cpu_s, peak_rss_mib)."""
    r = metrics["run"]
    rows = []
    for key, system, stage in _MODELS:
        m = metrics[key]
        out = {k: round(m[src], 4) for k, src in (
            ("precision", "precision"), ("recall", "recall"), ("f1", "f1"), ("aer", "aer"),
            ("aer_447", "aer_447_trial_tuned"), ("dev_aer", "dev_aer"))}
        out["gappy_right"] = int(m["gappy_right"])
        note = None
        if stage == "gappy":
            pipe = r["word_hmm_no_agreement_cpu_seconds"] + r["gappy_cpu_seconds"]
            out["pipeline_vs_word"] = round(pipe / r["word_hmm_agreement_cpu_seconds"], 2)
        if stage != "word_hmm_agreement":
            note = (f"the model alone; its start (Model 1 {int(r['start_ibm1_iterations'])} + "
                    f"HMM {int(r['start_hmm_iterations'])} without agreement) took "
                    f"{r['word_hmm_no_agreement_cpu_seconds']:.1f} s CPU; "
                    f"{int(r['phrasal_iterations'])} phrasal iterations")
        rows.append(make_row("phrasal", dataset, system, metrics=out,
                             cpu_s=r[f"{stage}_cpu_seconds"], headline=stage == "gappy",
                             machine_desc=desc, note=note))
    rows.append(make_row("phrasal", dataset, "whole task", wall_s=run["wall_s"],
                         cpu_s=run["cpu_s"], peak_rss_mib=run["peak_rss_mib"],
                         machine_desc=desc,
                         note=f"all four models, {int(r['training_pairs'])} training pairs"))
    return rows


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default="bansal2011_hansards",
                    choices=["bansal2011_hansards", "bansal2011_hansards_20k"])
    ap.add_argument("--pairs", type=int, default=None,
                    help="Hansards training pairs (data.train_limit; default: the experiment's)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="more Hydra overrides of the experiment")
    add_output_args(ap, "phrasal")
    args = ap.parse_args(argv)
    over = [f"experiment={args.experiment}", *([f"data.train_limit={args.pairs}"]
                                               if args.pairs is not None else []), *args.set]
    with tempfile.TemporaryDirectory(prefix="phrasal-bench-") as tmp:
        cmd = [sys.executable, str(ROOT / "train.py"), *over, f"hydra.run.dir={tmp}/run"]
        run = run_command(cmd)
        if run["returncode"] != 0:
            raise SystemExit(f"train.py failed:\n{run['stderr']}")
        metrics = json.loads((Path(tmp) / "run" / "metrics.json").read_text())
    rows = rows_from_metrics(metrics, _dataset(args.experiment, args.pairs), run,
                             machine() + ", 1 torch thread")
    for r in rows:
        print(f"{r['dataset']:<14} {r['system']:<22} {r['metrics']}  CPU {r['cpu_s']} s")
    if not args.no_save:
        print(f"wrote {write_rows('phrasal', rows, args.results)}")
    return rows


if __name__ == "__main__":
    main()
