"""The one export format: atomic write, round trip, clear errors, dispatch by kind."""

import json
import os
import stat

import pytest
import torch

import aligners
from aligners import families
from aligners.errors import AlignersInputError
from aligners.export import FORMAT, read_model, write_model


def test_round_trip_and_modes(tmp_path):
    t = {"w": torch.arange(6.0).reshape(2, 3), "ids": torch.tensor([3, 1], dtype=torch.int64)}
    out = write_model(tmp_path / "m", kind="test-kind", tensors=t, config={"a": 1},
                      extras={"vocab": {"source": ["x", "ä"]}})
    folder = read_model(out, kind="test-kind")
    assert folder.config == {"format": FORMAT, "kind": "test-kind", "a": 1}
    assert torch.equal(folder.tensor("w"), t["w"]) and torch.equal(folder.tensor("ids"), t["ids"])
    assert folder.json("vocab") == {"source": ["x", "ä"]}
    for name in ("model.safetensors", "config.json", "vocab.json"):
        assert stat.S_IMODE(os.stat(out / name).st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary left


def test_overwrite_is_whole_and_failure_leaves_old(tmp_path):
    write_model(tmp_path / "m", kind="k", tensors={"w": torch.zeros(1)}, config={"v": 1})
    with pytest.raises(TypeError):  # not JSON-serialisable: the old folder must survive
        write_model(tmp_path / "m", kind="k", tensors={"w": torch.ones(1)}, config={"v": object()})
    assert read_model(tmp_path / "m").config["v"] == 1
    write_model(tmp_path / "m", kind="k", tensors={"w": torch.ones(1)}, config={"v": 2})
    folder = read_model(tmp_path / "m")
    assert folder.config["v"] == 2 and folder.tensor("w").item() == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(AlignersInputError, match="no model folder"):
        read_model(tmp_path / "absent")
    write_model(tmp_path / "m", kind="k", tensors={"w": torch.zeros(1)}, config={})
    with pytest.raises(AlignersInputError, match="expected 'other'"):
        read_model(tmp_path / "m", kind="other")
    with pytest.raises(AlignersInputError, match="no tensor 'x'"):
        read_model(tmp_path / "m").tensor("x")
    (tmp_path / "m" / "config.json").write_text("{bad", encoding="utf-8")
    with pytest.raises(AlignersInputError, match="not valid JSON"):
        read_model(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps({"format": "x/0"}), encoding="utf-8")
    with pytest.raises(AlignersInputError, match="expected format"):
        read_model(tmp_path / "m")
    write_model(tmp_path / "n", kind="k", tensors={"w": torch.zeros(1)}, config={})
    (tmp_path / "n" / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(AlignersInputError, match="unreadable safetensors"):
        read_model(tmp_path / "n")
    stray = write_model(tmp_path / "m2", kind="nobody-registered-this", tensors={}, config={})
    with pytest.raises(AlignersInputError, match="unknown model kind"):
        aligners.load(stray)


def test_load_dispatches_on_kind(tmp_path, monkeypatch):
    fake = families.Family(name="test-kind", summary="", verb="none",
                           loader="tests.test_export:_fake_loader")
    registered = families._registered()
    monkeypatch.setattr(families, "_registered", lambda: (*registered, fake))
    out = write_model(tmp_path / "m", kind="test-kind", tensors={"w": torch.ones(2)}, config={})
    assert aligners.load(out) == ("loaded", 2.0)


def _fake_loader(folder):
    return "loaded", float(folder.tensor("w").sum())
