"""`benchmarks/gpu.py --device cpu --quick` runs (smoke test of the one-command GPU benchmark):
every case gives a row, ours agrees with torch-struct, the JSON holds the printed rows."""

import json

from benchmarks import gpu


def test_gpu_benchmark_quick_on_cpu(tmp_path, capsys):
    out = tmp_path / "gpu.json"
    report = gpu.main(["--device", "cpu", "--quick", "--repeats", "1", "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    rows = report["rows"]
    cases = {r["case"] for r in rows}
    assert len(cases) == len(gpu.CASES) == 10
    ours = [r for r in rows if r["impl"].startswith("ours")]
    assert len({r["case"] for r in ours}) == 10 and all(r["ms"] > 0 for r in ours)
    lattice = [r for r in ours if r["case"].startswith(("linear", "semi", "factored"))]
    assert len(lattice) == 5 and all(r["kernels"] > 0 for r in lattice)  # CPU: aten ops
    word = [r for r in ours if r["case"].startswith("word")]
    assert len(word) == 1 and word[0]["loglik_fwd"] < 0  # --device cpu: the CPU row only
    mono = [r for r in ours if r["case"].startswith("mono")]
    assert len(mono) == 1 and 0 <= mono[0]["test_f1"] <= 1
    aligned = [r for r in ours if "aer" in r and not r["case"].startswith("word")]  # CLI cases
    # the gappy phrasal HSMM and the whole `aligners align` (200k and full-set cases)
    assert len(aligned) == 3 and all(0 < r["aer"] < 1 for r in aligned)
    assert all(" read " in r["note"] and " write " in r["note"]  # where the time went
               for r in aligned if r["case"].startswith("HMM align"))
    diffs = [r["logz_diff"] for r in ours if "logz_diff" in r]
    assert len(diffs) == 4 and max(diffs) < 1e-4  # the four chain cases vs torch-struct
    printed = capsys.readouterr().out
    assert "| case | implementation |" in printed and all(c in printed for c in cases)
    # the same rows as result rows (what a non-quick run merges into benchmarks/results/gpu.json)
    lattice_cases = {r["case"] for r in lattice} | {r["case"] for r in rows
                                                   if r["impl"].startswith("torch-struct")}
    results = gpu.result_rows(rows, lattice_cases)
    assert len(results) == len(rows)
    assert {r["task"] for r in results if r["dataset"] in lattice_cases} == {"gpu-lattices"}
    assert {r["task"] for r in results if r["dataset"] not in lattice_cases} == {"gpu-models"}
    cpu = [r for r in results if r["system"].endswith(" on cpu") and r["wall_s"]]
    assert cpu and all(r["cuda_peak_mib"] is None for r in cpu)  # --device cpu: RSS only
    assert any(r["metrics"].get("speedup", 0) > 0 for r in results)


def test_gpu_benchmark_optional_cases_quick_on_cpu(tmp_path):
    """The device run's other cases (benchmarks/gpu_session.sh): the full set x 4 (here 500
    pairs x 4 + test) and the Bayesian aligner, which runs on the CPU whatever the device."""
    out = tmp_path / "gpu.json"
    report = gpu.main(["--device", "cpu", "--quick", "--repeats", "1", "--json", str(out),
                       "--cases", "case_align_4x", "case_bayes_cpu"])
    rows = {r["case"]: r for r in report["rows"]}
    assert set(rows) == {"HMM align (full set x 4), whole command, 2447 Hansards pairs",
                         "Bayesian align (exact sampler, CPU), 947 Hansards pairs"}
    assert all(0 < r["aer"] < 1 and r["impl"] == "ours on cpu" for r in rows.values())
    assert all(" peak memory: host " in r["note"] for r in rows.values())
