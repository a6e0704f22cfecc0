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
