"""Training curves: the CSVLogger's per-iteration values drawn as a PNG beside the run."""

from aligners.plots import plot_training_curves, read_curves

CSV = """epoch,loglik_bwd,loglik_fwd,step,test_aer
0,-93284.2,-104656.7,1,
1,-46526.4,-51282.1,3,
2,-45285.2,,5,
3,-44408.4,-49382.7,7,0.12
"""


def test_curves_are_read_per_quantity(tmp_path):
    f = tmp_path / "metrics.csv"
    f.write_text(CSV)
    axis, curves = read_curves(f)
    assert axis == "epoch" and set(curves) == {"loglik_bwd", "loglik_fwd"}  # one point: no curve
    assert curves["loglik_fwd"] == ([0.0, 1.0, 3.0], [-104656.7, -51282.1, -49382.7])
    assert curves["loglik_bwd"][1][-1] == -44408.4


def test_one_png_per_logged_run(tmp_path):
    for version in ("version_0", "version_1"):
        d = tmp_path / "logs" / version
        d.mkdir(parents=True)
        (d / "metrics.csv").write_text(CSV)
    written = plot_training_curves(tmp_path)
    assert [p.name for p in written] == ["training-version_0.png", "training-version_1.png"]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000
    (tmp_path / "logs" / "version_1" / "metrics.csv").unlink()
    assert [p.name for p in plot_training_curves(tmp_path)] == ["training.png"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert plot_training_curves(empty) == []
