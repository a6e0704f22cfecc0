"""Monolingual alignment (Yao et al. 2013 sets, MultiMWA) against the paper's and jacana's
figures: test scores of the experiments and decoding speed of saved models; rows ->
benchmarks/results/mono.json.

    python benchmarks/mono.py --experiment tokencrf_msr06           # train + test (train.py)
    python benchmarks/mono.py --experiment neural_multimwa_wiki --set model.threshold=0.4 \\
        --system "neural ensemble, threshold 0.4"
    python benchmarks/mono.py --run RUN [RUN ...]                   # finished run folders
    python benchmarks/mono.py --speed random:token random:phrase --data msr06 --limit 300
    python benchmarks/mono.py --speed RUN/model --system "neural s2t, 6 layers" \
        --data multimwa-wiki --limit 300

--experiment runs `python train.py experiment=NAME` (+ --set overrides) as a child under the
harness (wall, CPU, peak RSS of the whole task) and reads its run folder like --run: for each
scored split (test, and the extra MultiMWA test sets) the row of the experiment's decoding
(`model.combine` when it combines the two directions, else s2t): macro / micro F1, exact
match and non-identical F1 (%), from metrics.json. Task mono-yao for MSR06 / EDB++ (the
paper's tables use macro F1), mono-multimwa for MultiMWA.

--speed decodes the first --limit pairs of --data/--split with each model (a saved folder,
or `random:token` / `random:phrase` for a CRF with random weights: the cost does not depend
on them) through `aligners.load(folder).align`: cold (the word / word-pair / WordNet caches
emptied first) and warm (the same call again); pairs per second of each (task mono-speed).
jacana itself (Java) cannot run here: its 65 pairs/s is the paper's figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, add_output_args, machine, make_row, run_command, write_rows  # noqa: E402

sys.path.insert(0, str(ROOT))

__all__ = ["main", "rows_from_run", "speed_rows"]

# registry data set -> result id (the report's names); experiment prefix -> system
DATA_IDS = {"msr06": "msr06", "msr06-phrasal": "msr06p", "edbpp": "edbpp",
            "edbpp-phrasal": "edbppp", "multimwa-wiki": "multimwa-wiki",
            "multimwa-newsela": "multimwa-newsela", "multimwa-arxiv": "multimwa-arxiv"}
SYSTEMS = (("tokencrf_", "token CRF"), ("yao2013_", "phrase CRF"),
           ("neural_multimwa_wiki_fast", "neural fast (3 layers)"),
           ("neural_multimwa_wiki", "neural ensemble (4 models)"), ("neural_", "neural semi-CRF"))
_HEADLINE = {("msr06", "neural semi-CRF"), ("multimwa-wiki", "neural ensemble (4 models)")}


def _system(experiment: str) -> str:
    return next((name for prefix, name in SYSTEMS if experiment.startswith(prefix)), experiment)


def _pct(x: float | None, digits: int = 2):
    return None if x is None else round(100 * x, digits)


def rows_from_run(run: Path, *, system: str | None = None, timing: dict | None = None,
                  command: str | None = None) -> list[dict]:
    """Rows of one finished run folder (metrics.json + .hydra/config.yaml); a folder that is
    not a monolingual run is a ValueError naming it."""
    from omegaconf import OmegaConf

    try:
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{run}: not a finished run folder ({err})") from None
    if cfg.get("task") != "mono":
        raise ValueError(f"{run}: task {cfg.get('task')!r}, not a monolingual run")
    combine = cfg.model.get("combine", "none") or "none"
    use = combine if combine != "none" else cfg.training.directions[0]
    over = OmegaConf.load(run / ".hydra" / "overrides.yaml") if (
        run / ".hydra" / "overrides.yaml").exists() else []
    experiment = next((o.split("=", 1)[1] for o in over if o.startswith("experiment=")),
                      run.name)
    system = system or _system(experiment)
    name = str(cfg.data.name)
    rows = []
    for key, m in metrics.items():
        split, _, how = key.partition("/")
        if how != use or "macro/f1" not in m:
            continue
        data = DATA_IDS.get(name if split == "test" else split, split)
        out = {"macro_f1": _pct(m["macro/f1"]), "micro_f1": _pct(m["micro/f1"]),
               "exact": _pct(m.get("exact_match"), 1),
               "nonident_f1_macro": _pct(m.get("breakdown/non-identical/macro/f1")),
               "nonident_f1_micro": _pct(m.get("breakdown/non-identical/micro/f1"))}
        task = "mono-multimwa" if data.startswith("multimwa") else "mono-yao"
        rows.append(make_row(task, data, system, metrics={k: v for k, v in out.items()
                                                            if v is not None},
                             **(timing or {}), command=command,
                             headline=(data, system) in _HEADLINE,
                             note=f"decoding: {use}" + ("; time = the whole train.py task"
                                                        if timing else "")))
    if not rows:
        raise ValueError(f"{run}: metrics.json has no '<split>/{use}' scores")
    return rows


def speed_rows(models: list[str], args) -> list[dict]:
    """Cold and warm pairs/s of each model on the first --limit pairs (task mono-speed);
    args.system: the rows' system names, in the order of `models` (default: the CRF kind
    or the run folder's name)."""
    import torch

    from aligners import load
    from aligners.data.datasets import load as load_data
    from aligners.features.string_sim import clear_caches
    from aligners.models.mono.aligner import MonoAligner, build_model

    torch.set_num_threads(args.threads)
    pairs = load_data(args.data, args.split)[: args.limit or None]
    names = list(args.system or [])
    rows = []
    for spec in models:
        if spec.startswith("random:"):
            kind = spec.split(":", 1)[1]
            model = build_model(kind=kind)
            torch.manual_seed(0)
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(0, 0.3)
            aligner, system = MonoAligner({"s2t": model}, kind=kind), f"{kind} CRF"
        else:
            aligner, system = load(spec), Path(spec).resolve().parent.name
        system = names.pop(0) if names else system
        kw = {} if args.combine == "none" else {"combine": args.combine}
        clear_caches()
        rate = {}
        for phase in ("cold", "warm"):
            t = time.perf_counter()
            aligner.align(pairs, **kw)
            rate[phase] = round(len(pairs) / (time.perf_counter() - t), 1)
        print(f"{system}: {rate['cold']} pairs/s cold, {rate['warm']} warm", flush=True)
        rows.append(make_row("mono-speed", DATA_IDS.get(args.data, args.data), system,
                             metrics={"pairs_per_s_cold": rate["cold"],
                                      "pairs_per_s_warm": rate["warm"]},
                             machine_desc=machine() + f", {args.threads} torch thread(s)",
                             note=f"first {len(pairs)} {args.split} pairs; combine "
                                  f"{args.combine}; cold = word / WordNet caches emptied"))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--experiment", help="train.py experiment to run and score")
    what.add_argument("--run", nargs="+", type=Path, help="finished run folders to read")
    what.add_argument("--speed", nargs="+", metavar="MODEL",
                      help="model folders (or random:token / random:phrase) to time")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="--experiment: more Hydra overrides")
    ap.add_argument("--system", nargs="+", help="the rows' system names, one per model / run "
                    "(default: from the experiment, the CRF kind or the run folder)")
    ap.add_argument("--data", default="msr06", help="--speed: registry data set")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=300, help="--speed: pairs (0 = all)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--combine", default="none", help="--speed: combine option of align()")
    add_output_args(ap, "mono")
    args = ap.parse_args(argv)
    try:
        if args.speed:
            rows = speed_rows(args.speed, args)
        elif args.run:
            names = list(args.system or [])
            rows = [r for run in args.run
                    for r in rows_from_run(run, system=names.pop(0) if names else None)]
        else:
            with tempfile.TemporaryDirectory(prefix="mono-bench-") as tmp:
                cmd = [sys.executable, str(ROOT / "train.py"), f"experiment={args.experiment}",
                       *args.set, f"hydra.run.dir={tmp}/run"]
                res = run_command(cmd)
                if res["returncode"] != 0:
                    raise ValueError(f"train.py failed:\n{res['stderr']}")
                rows = rows_from_run(Path(tmp) / "run", system=(args.system or [None])[0], timing={
                    k: res[k] for k in ("wall_s", "cpu_s", "peak_rss_mib")})
    except ValueError as err:
        print(f"{ap.prog}: error: {err}", file=sys.stderr)
        return 2
    for r in rows:
        print(f"{r['task']:<14} {r['dataset']:<17} {r['system']:<28} {r['metrics']}")
    if not args.no_save:
        print(f"wrote {write_rows('mono', rows, args.results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
