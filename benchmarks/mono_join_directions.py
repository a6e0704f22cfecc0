"""Join an s2t model folder and a t2s model folder (two training runs) into one two-direction
monolingual model folder, for `combine` (`aligners monoalign --combine`, `model.combine=`).

    python benchmarks/mono_join_directions.py --s2t RUN_A/model --t2s RUN_B/model --out DIR

Both folders must be the same kind with the same model settings (`export_config`) and
feature names; anything else is refused. The joined folder's config records both sources and
their training settings (`joined_from`). Cost: loading and writing the two models' tensors.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.export import load  # noqa: E402
from aligners.models.mono.aligner import MonoAligner  # noqa: E402


def _hp(model) -> dict:
    return (model.export_config() if hasattr(model, "export_config")
            else {k: getattr(model, k) for k in ("max_src_len", "max_tgt_len", "embedding",
                                                 "phrase_cues")})


def join(s2t_folder, t2s_folder, out) -> Path:
    """The joined MonoAligner saved at `out` (see the module docstring)."""
    a, b = load(s2t_folder), load(t2s_folder)
    if "s2t" not in a.models or "t2s" not in b.models:
        raise SystemExit(f"need an s2t model and a t2s model; got {a.directions} and "
                         f"{b.directions}")
    ma, mb = a.models["s2t"], b.models["t2s"]
    if a.kind != b.kind or _hp(ma) != _hp(mb) or list(ma.feature_names) != list(
            mb.feature_names):
        raise SystemExit(f"the two models differ: {a.kind} {_hp(ma)} vs {b.kind} {_hp(mb)}")
    joined = MonoAligner({"s2t": ma, "t2s": mb}, kind=a.kind)
    return joined.save(out, config={"joined_from": {
        "s2t": {"folder": str(s2t_folder), **{k: v for k, v in a.meta.items()}},
        "t2s": {"folder": str(t2s_folder), **{k: v for k, v in b.meta.items()}}}})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--s2t", required=True, help="model folder holding an s2t model")
    ap.add_argument("--t2s", required=True, help="model folder holding a t2s model")
    ap.add_argument("--out", required=True, help="the joined model folder to write")
    args = ap.parse_args(argv)
    print(f"wrote {join(args.s2t, args.t2s, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
