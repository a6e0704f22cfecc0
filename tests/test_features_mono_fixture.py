"""The vectorised / cached feature code gives bit-identical features to the reference
implementation on a fixture (stored by tests/data/make_mono_features.py)."""

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from aligners.features.string_sim import clear_caches
from aligners.features.wordnet import wordnet_dir

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("cold", [True, False])
def test_features_bit_identical_to_reference(cold):
    if wordnet_dir() is None:
        pytest.skip("WordNet database not installed: the reference features use it")
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_mono", DATA / "make_mono_features.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if cold:
        clear_caches()
    ref = load_file(str(DATA / "mono_features.safetensors"))
    new = mod.compute()
    assert set(new) == set(ref)
    for k in ref:
        assert new[k].dtype == ref[k].dtype and new[k].shape == ref[k].shape, k
        assert torch.equal(new[k], ref[k]), k


def test_featurize_states_equals_featurize_span_in_state_order():
    """`featurize_states` = `featurize`'s span gathered into state order, cast to float16."""
    from aligners.features.monolingual import featurize, featurize_states
    from aligners.models.mono.states import state_table
    for src, tgt, Ls, Lt in [("a b c d".split(), "b a".split(), 3, 3),
                             ("New York is big".split(), "New York City is big".split(), 2, 3),
                             ("x".split(), "x y z".split(), 1, 1)]:
        ref = featurize(src, tgt, max_src_len=Ls, max_tgt_len=Lt, phrase_cues=True)
        st = state_table(tgt_len=len(tgt), max_tgt_len=Lt)
        gathered = torch.zeros(len(src), Ls, len(st["end0"]), ref.span.shape[-1])
        gathered[:, :, 1:] = ref.span[:, :, st["end0"][1:], st["length"][1:] - 1]
        emit, null = featurize_states(src, tgt, max_src_len=Ls, max_tgt_len=Lt,
                                      phrase_cues=True)
        assert torch.equal(emit, gathered.half()) and torch.equal(null, ref.null)
        assert emit.abs().sum() > 0
