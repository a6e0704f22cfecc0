"""The word aligner on CUDA gives the CPU's numbers (marker ``cuda``; without a GPU the same
comparisons run CPU-vs-CPU, see cuda_device.py).

Tolerances (float32 tables, summation order differs between devices): every EM table after
2 iterations (1 Model 1 + 1 HMM, and 2 HMM after 1 Model 1 for the jump tables) within
1e-5 absolute and 1e-4 relative of the CPU's; log-likelihoods within 1e-5 relative.
``aligners align --load-model M --device cuda`` writes the CPU's links (the index is built
on the model's device over its pair table). The pair index built on the device (torch
unique / searchsorted) has the CPU kernels' keys and ids, bit for bit.
``ALIGNERS_TEST_DEVICE=cpu`` runs the same comparisons CPU-vs-CPU on a GPU machine too.
"""


import pytest
import torch
from cuda_device import CUDA_MARKS, DEVICE
from word_toy import toy_corpus

from aligners.cli import main
from aligners.data.bitext import build_index
from aligners.data.vocab import WordIds
from aligners.models.aligned import RunOptions
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner
from aligners.models.hmm.folder import TrainedWordAligner

pytestmark = CUDA_MARKS
TABLES = ("t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd", "jump_bwd")


def _fit(device, agreement):
    src, tgt = toy_corpus(120, seed=1)
    index = build_index(list(zip(src, tgt)), WordIds(), WordIds(), cells=2000)
    config = WordAlignConfig(ibm1_iterations=1, hmm_iterations=2, agreement=agreement,
                             max_jump=3)
    model = WordAligner.from_index(index, config).to(device)
    model.reset_counts()
    index.to(device)
    assert index.batch(0).pair_ids.device.type == torch.device(device).type
    history = model.fit(index)
    return model, history


@pytest.mark.parametrize("agreement", [True, False])
def test_em_tables_after_two_iterations_match_the_cpu(agreement):
    cpu, h_cpu = _fit("cpu", agreement)
    dev, h_dev = _fit(DEVICE, agreement)
    assert dev.t_fwd.device.type == DEVICE.type
    for name in TABLES:
        a, b = getattr(dev, name).cpu(), getattr(cpu, name)
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4), (name, float((a - b).abs().max()))
    assert torch.allclose(torch.tensor(h_dev), torch.tensor(h_cpu), rtol=1e-5, atol=0)


def test_align_load_model_on_the_device_writes_the_cpu_links(tmp_path):
    src, tgt = toy_corpus(80, seed=2)
    s, t = tmp_path / "c.src", tmp_path / "c.tgt"
    s.write_text("".join(" ".join(x) + "\n" for x in src), encoding="utf-8")
    t.write_text("".join(" ".join(x) + "\n" for x in tgt), encoding="utf-8")
    fast = ["--model", "hmm", "--ibm1-iterations", "2", "--hmm-iterations", "2", "--quiet",
            "--max-jump", "3"]
    model = tmp_path / "model"
    assert main(["align", "-s", str(s), "-t", str(t), "-o", str(tmp_path / "train.out"),
                 "--save-model", str(model), *fast]) == 0
    outs = {}
    for device in ("cpu", str(DEVICE)):
        out = tmp_path / f"{device}.out"
        assert main(["align", "-s", str(s), "-t", str(t), "-o", str(out), "--quiet",
                     "--load-model", str(model), "--device", device]) == 0
        outs[device] = [set(x.split()) for x in out.read_text(encoding="utf-8").splitlines()]
    a, b = outs["cpu"], outs[str(DEVICE)]
    assert len(a) == len(b) == 80
    differ = sum(len(x ^ y) for x, y in zip(a, b))
    assert differ <= 0.01 * sum(len(x) for x in a)  # float32 ties at the threshold only
    loaded = TrainedWordAligner.from_folder(model)
    index = loaded.decode(list(zip(src, tgt)), RunOptions(device=str(DEVICE))).index
    assert index.keys.device.type == "cpu"
    assert index.batch(0).pair_ids.device.type == DEVICE.type


def test_pair_index_on_the_device_equals_the_cpu_kernels():
    """Keys and every batch's ids equal, with a found table and with a given one (every
    other key: the rest get P), on many small batches."""
    src, tgt = toy_corpus(200, seed=3)
    pairs = list(zip(src, tgt))
    cpu = build_index(pairs, WordIds(), WordIds(), cells=500)
    dev = build_index(pairs, WordIds(), WordIds(), cells=500, device=DEVICE)
    assert len(cpu) == len(dev) > 5 and torch.equal(cpu.keys, dev.keys)
    assert dev.keys.device.type == "cpu" and dev.batch(0).pair_ids.device.type == DEVICE.type
    half = cpu.keys[::2].clone()
    fixed = build_index(pairs, WordIds(), WordIds(), cells=500, keys=half)
    fixed_dev = build_index(pairs, WordIds(), WordIds(), cells=500, keys=half, device=DEVICE)
    for a, b, c, d in zip(cpu, dev, fixed, fixed_dev, strict=True):
        assert torch.equal(a.pair_ids, b.pair_ids.cpu())
        assert torch.equal(c.pair_ids, d.pair_ids.cpu())
    assert any((b.pair_ids[b.mask] == fixed.n_pairs).any() for b in fixed)


def test_pair_index_on_the_device_launches_a_fixed_number_of_ops_per_batch():
    """The device path's structure, checkable on the CPU: the torch ops it launches grow by
    the same number with every batch (none per sentence or per pair), a found table and a
    given one alike (top-level aten ops under torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    from aligners.data._pairtable import device_pair_ids

    def ops(k, keys):
        g = torch.Generator().manual_seed(k)
        words = [(torch.arange(3), torch.randint(2, 30, (3, 4), generator=g).to(DEVICE),
                  torch.randint(2, 40, (3, 5), generator=g).to(DEVICE),
                  torch.tensor([4, 4, 2], device=DEVICE), torch.tensor([5, 3, 1], device=DEVICE))
                 for _ in range(k)]
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            device_pair_ids(words, 40, keys)
        return sum(e.name.startswith("aten::") and not (
            e.cpu_parent is not None and e.cpu_parent.name.startswith("aten::"))
            for e in prof.events())

    for keys in (None, torch.arange(0, 1200, 3)):
        n2, n4, n8 = (ops(k, keys) for k in (2, 4, 8))
        assert n8 - n4 == 2 * (n4 - n2) and 0 < n4 - n2 <= 2 * 64, (n2, n4, n8)
