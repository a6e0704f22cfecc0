"""LCLR (Chang et al. 2010): the experiments' test figures against the paper's, and the ILP
inference speed against scipy's MILP; rows -> benchmarks/results/lclr.json.

    python benchmarks/lclr.py --pairs 400 [--workers 2] [--weights RUN/lclr]   # ILP speed
    python benchmarks/lclr.py --experiment lclr_paraphrase                     # train + test
    python benchmarks/lclr.py --pairs 20 --workers 1 --no-save                 # a smoke run
    python benchmarks/lclr.py --experiment lclr_entailment --ablate wordnet pos ne neg string \
        dep node_info                                                          # ablation table

ILP mode: builds the paraphrase ILPs of the first N MSRP test pairs (Link Grammar parses from
the JSON-lines cache, parsing what is missing), scores the variables with the two-stage
heuristic weights (or, with `--weights RUN/lclr`, a trained model's) and solves every ILP (a)
LP relaxation first through highspy (ours, `method="lp_first"`), (b) scipy's `milp` with
presolve off and (c) `milp` with presolve on (scipy's default), one after the other in the
same process; then (a) again on `--workers` processes. Prints per-pair solver time
percentiles (wall and CPU), pairs/s and how often the LP vertex was integral (task lclr-ilp).

Experiment mode: `python train.py experiment=NAME` (lclr_transliteration, lclr_paraphrase,
lclr_entailment) as a child under the harness; rows from its metrics.json: two-stage and
LCLR test accuracy (and MRR for transliteration), the LCLR phase's time (task lclr).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, add_output_args, machine, make_row, run_command, write_rows  # noqa: E402

sys.path.insert(0, str(ROOT))

from aligners.data.datasets import load  # noqa: E402
from aligners.features.parse import default_cache_dir, parse_all  # noqa: E402
from aligners.ilp import solve_ilp  # noqa: E402
from aligners.models.lclr import make_task  # noqa: E402
from aligners.models.lclr.model import variable_scores  # noqa: E402

__all__ = ["main", "rows_from_metrics", "versions"]

_DATA = {"lclr_transliteration": "news-translit-enhe", "lclr_paraphrase": "msrp",
         "lclr_entailment": "rte5"}


def _problems(n: int, weights: str | None = None):
    pairs = load("msrp", "test")[:n]
    texts = [p.text1 for p in pairs] + [p.text2 for p in pairs]
    graphs = parse_all(texts, cache=default_cache_dir() / "parses" / "lg-msrp-test.jsonl")
    if weights:
        import aligners
        clf = aligners.load(weights)
        task, w = clf.task, clf.weights
    else:
        task = make_task("paraphrase")
    task.graphs = dict(zip(texts, graphs, strict=True))
    insts = [task.instance(p.text1, p.text2) for p in pairs]
    if not weights:
        w = task.heuristic_weights()
        w = np.pad(w, (0, len(task.features) - len(w)))
    return [(variable_scores(x, w), task.constraints(x)) for x in insts]


def _solve_all(problems, method: str, presolve: bool, out=None):
    wall, cpu = [], []
    for scores, cons in problems:
        t0, c0 = time.perf_counter(), time.process_time()
        r = solve_ilp(scores, cons, presolve=presolve, method=method)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if out is not None:
            out.append(r)
    return np.array(wall), np.array(cpu)


def _chunk(args):
    problems, method, presolve = args
    t0 = time.perf_counter()
    _solve_all(problems, method, presolve)
    return time.perf_counter() - t0


def _row(name, wall, cpu):
    p = lambda a, q: 1e3 * np.percentile(a, q)  # noqa: E731
    print(f"{name:<22} pairs/s wall {len(wall) / wall.sum():7.1f}  cpu {len(cpu) / cpu.sum():7.1f}"
          f" | ms wall p50 {p(wall, 50):6.2f} p90 {p(wall, 90):6.2f} p99 {p(wall, 99):7.2f} "
          f"max {1e3 * wall.max():7.2f} | ms cpu p50 {p(cpu, 50):6.2f} p90 {p(cpu, 90):6.2f}")


def versions() -> str:
    """The solver and numeric stack a figure was measured with (constraints.txt pins it)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in ("highspy", "scipy", "numpy", "torch"):
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            out.append(f"{name} absent")
    return ", ".join(out)


def _seeds(test: dict, key: str) -> list[int]:
    """The seeds of system `key`'s per-seed test figures (`<key>_acc_seed<seed>`)."""
    return sorted(int(k.rsplit("seed", 1)[1]) for k in test if k.startswith(f"{key}_acc_seed"))


def _pairs_note(key: str, test: dict, train: dict, inf: dict) -> str:
    """Mean ± sd over seeds, each seed's accuracy and C; for LCLR the training and per-pair
    ILP inference cost."""
    seeds = _seeds(test, key)
    per = ", ".join(f"seed {s}: {100 * test[f'{key}_acc_seed{s}']:.2f} "
                    f"(C {train[f'{key}_C_seed{s}']:g})" for s in seeds)
    folds, repeats = int(train.get("cv_folds", 3)), int(train.get("cv_repeats", 5))
    who = "each system's own" if train.get("lclr_cv") else "the two-stage system's (LCLR uses it)"
    note = (f"{100 * test[f'{key}_acc']:.2f} ± {100 * test[f'{key}_acc_sd']:.2f} (mean ± sd "
            f"over {len(seeds)} seeds of the whole pipeline; {per}); C by {who} {folds}-fold CV "
            f"x {repeats} shuffles on the training split")
    if key == "lclr" and inf:
        note += (f"; time = LCLR training per seed ({train['lclr_outer_iterations']:.1f} outer "
                 f"iterations on average); ILP inference per test pair: median "
                 f"{inf['ms_median']:.1f} ms wall, {inf['cpu_ms_median']:.1f} ms CPU, "
                 f"{inf['pairs_per_s_wall']:.0f} pairs/s, {inf['variables_mean']:.0f} variables "
                 f"and {inf['constraints_mean']:.0f} constraints on average; peak RSS = the "
                 "whole run")
    return note


def _translit_note(key: str, test: dict, train: dict) -> str:
    """Mean ± sd over seeds of accuracy and MRR, each seed's figures and C."""
    seeds = _seeds(test, key)
    per = ", ".join(f"seed {s}: {100 * test[f'{key}_acc_seed{s}']:.2f} / "
                    f"{100 * test[f'{key}_mrr_seed{s}']:.2f} (C {train[f'{key}_C_seed{s}']:g})"
                    for s in seeds)
    return (f"accuracy {100 * test[f'{key}_acc']:.2f} ± {100 * test[f'{key}_acc_sd']:.2f}, "
            f"MRR {100 * test[f'{key}_mrr']:.2f} ± {100 * test[f'{key}_mrr_sd']:.2f} (mean ± sd "
            f"over {len(seeds)} seeds of the whole pipeline: the draw of the training pairs, "
            f"the CV folds and distractors, training; accuracy / MRR per seed: {per}); C by "
            f"{int(train['cv_folds'])}-fold CV (MRR) on the training names; {int(test['names'])} "
            f"test names ranked against {int(test['names'])} candidates")


def rows_from_metrics(metrics: dict, experiment: str, run: dict, desc: str) -> list[dict]:
    """Rows of an LCLR experiment's metrics.json (accuracies and MRR in %); sentence-pair
    experiments: the mean over seeds, with the sd and the package versions in the note."""
    test, train = metrics["test"], metrics.get("train", {})
    inf = metrics.get("inference", {})
    data = _DATA[experiment]
    rows = []
    for key, system in (("two_stage", "two-stage"), ("lclr", "LCLR")):
        m = {"accuracy": round(100 * test[f"{key}_acc"], 2)}
        if f"{key}_mrr" in test:
            m["mrr"] = round(100 * test[f"{key}_mrr"], 2)
        lclr = key == "lclr" and "lclr_seconds" in train
        if f"{key}_mrr_sd" in test:  # transliteration over seeds
            m["accuracy_sd"] = round(100 * test[f"{key}_acc_sd"], 2)
            m["mrr_sd"] = round(100 * test[f"{key}_mrr_sd"], 2)
            note = _translit_note(key, test, train)
            note += f"; {versions()}; whole run {run['wall_s']:.0f} s wall"
        elif f"{key}_acc_sd" in test:
            m["accuracy_sd"] = round(100 * test[f"{key}_acc_sd"], 2)
            note = _pairs_note(key, test, train, inf if lclr else {})
            note += (f"; {versions()}; whole run {run['wall_s']:.0f} s wall; the box was shared "
                     "with other agents' jobs (timings not quiet)")
        else:
            note = f"C = {train[f'{key}_C']:g}" if f"{key}_C" in train else None
        rows.append(make_row(
            "lclr", data, system, metrics=m, wall_s=train["lclr_seconds"] if lclr else None,
            cpu_s=train.get("lclr_cpu_seconds") if lclr else None,
            peak_rss_mib=run["peak_rss_mib"] if lclr else None, machine_desc=desc,
            headline=key == "lclr" and data == "news-translit-enhe", note=note))
    return rows


def ilp_rows(args) -> list[dict]:
    problems = _problems(args.pairs, args.weights)
    nv = [c.num_variables for _, c in problems]
    nc = [c.num_constraints for _, c in problems]
    print(f"{len(problems)} MSRP test pairs: variables mean {np.mean(nv):.0f} max {max(nv)}, "
          f"constraints mean {np.mean(nc):.0f} max {max(nc)}"
          + (f"; weights {args.weights}" if args.weights else "; heuristic weights"))
    _solve_all(problems[:20], "lp_first", False)  # warm-up
    _solve_all(problems[:20], "milp", False)
    res: list = []
    runs = {"LP first via highspy (ours)": _solve_all(problems, "lp_first", False, res)}
    ref: list = []
    runs["scipy milp, presolve off"] = _solve_all(problems, "milp", False, ref)
    runs["scipy milp, presolve on"] = _solve_all(problems, "milp", True)
    for name, (wall, cpu) in runs.items():
        _row(name, wall, cpu)
    frac = float(np.mean([r.lp_integral for r in res]))
    same = all(abs(a.value - b.value) <= 1e-9 * max(1.0, abs(b.value))
               for a, b in zip(res, ref, strict=True))
    print(f"LP vertex integral on {100 * frac:.1f}% of the pairs; optimum equal to milp's on "
          f"every pair: {same}")
    k = args.workers
    parts = [(problems[i::k], "lp_first", False) for i in range(k)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(k) as ex:
        list(ex.map(_chunk, parts))
    pool_rate = len(problems) / (time.perf_counter() - t0)
    print(f"LP first, {k} processes: {pool_rate:.1f} pairs/s wall (incl. process start-up)")
    data = (f"MSRP test, {len(problems)} pairs, "
            f"{'LCLR' if args.weights else 'heuristic'} weights")
    rows = []
    for name, (wall, cpu) in runs.items():
        ours = name.startswith("LP first")
        m = {"pairs_per_s_wall": float(round(len(wall) / wall.sum(), 1)),
             "pairs_per_s_cpu": float(round(len(cpu) / cpu.sum(), 1))}
        if ours:
            m["integral"] = round(100 * frac, 1)
        rows.append(make_row("lclr-ilp", data, name, role="ours" if ours else "peer", metrics=m,
                             headline=ours and not args.weights,
                             note=(f"every optimum equals milp's: {same}; {k} processes: "
                                   f"{pool_rate:.1f} pairs/s incl. start-up")
                             if ours else None))
    return rows


def ablation(experiment: str, groups: list[str], sets: list[str]) -> None:
    """One run of `experiment` per group left out (a `FEATURE_GROUPS` name or `node_info`)
    plus the full set; prints the markdown table group -> mean ± sd test accuracy."""
    lines = ["| features | two-stage acc % | LCLR acc % | LCLR - two-stage |",
             "|---|---|---|---|"]
    for g in ["none", *groups]:
        drop = ("model.node_info=false" if g == "node_info"
                else f"model.drop_features=[{'' if g == 'none' else g}]")
        with tempfile.TemporaryDirectory(prefix="lclr-ablate-") as tmp:
            run = run_command([sys.executable, str(ROOT / "train.py"), f"experiment={experiment}",
                               *sets, drop, f"hydra.run.dir={tmp}/run"])
            if run["returncode"] != 0:
                raise SystemExit(f"train.py failed:\n{run['stderr']}")
            t = json.loads((Path(tmp) / "run" / "metrics.json").read_text())["test"]
        two, joint = (f"{100 * t[k]:.2f} ± {100 * t[k + '_sd']:.2f}"
                      for k in ("two_stage_acc", "lclr_acc"))
        lines.append(f"| {'all' if g == 'none' else 'without ' + g} | {two} | {joint} | "
                     f"{100 * (t['lclr_acc'] - t['two_stage_acc']):+.2f} |")
        print(lines[-1], flush=True)
    print("\n".join(lines))


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", choices=sorted(_DATA),
                    help="run this experiment instead of the ILP speed test")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="--experiment: more Hydra overrides")
    ap.add_argument("--pairs", type=int, default=400)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--weights", default=None, help="a saved LCLR model folder (RUN/lclr)")
    ap.add_argument("--run-dir", default=None,
                    help="--experiment: keep the run folder (models, metrics.json, train.log)")
    ap.add_argument("--ablate", nargs="*", metavar="GROUP",
                    help="--experiment: one run per feature group left out (wordnet pos ne neg "
                         "string dep node_info) and the full set; prints a table, saves no row")
    add_output_args(ap, "lclr")
    args = ap.parse_args(argv)
    if args.experiment and args.ablate is not None:
        ablation(args.experiment, args.ablate, args.set)
        return []
    if args.experiment:
        with tempfile.TemporaryDirectory(prefix="lclr-bench-") as tmp:
            run_dir = Path(args.run_dir or Path(tmp) / "run")  # train.py makes it: new or empty
            cmd = [sys.executable, str(ROOT / "train.py"), f"experiment={args.experiment}",
                   *args.set, f"hydra.run.dir={run_dir}"]
            stdout = Path(tmp) / "stdout.log"  # outside the run folder, which must start empty
            with open(stdout, "w", encoding="utf-8") as log:
                run = run_command(cmd, stdout=log)
            if run["returncode"] != 0:
                raise SystemExit(f"train.py failed:\n{run['stderr']}")
            metrics = json.loads((run_dir / "metrics.json").read_text())
            print(stdout.read_text(encoding="utf-8")[-3000:])
        rows = rows_from_metrics(metrics, args.experiment, run, machine())
    else:
        rows = ilp_rows(args)
    for r in rows:
        print(f"{r['dataset']:<40} {r['system']:<28} {r['metrics']}")
    if not args.no_save:
        print(f"wrote {write_rows('lclr', rows, args.results)}")
    return rows


if __name__ == "__main__":
    main()
