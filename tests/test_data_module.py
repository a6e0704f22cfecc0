"""ParallelDataModule: batches cover the corpus, epochs reshuffle reproducibly, cache reuse."""

import os

import torch

from aligners.data.corpus import ParallelCorpus
from aligners.data.module import BucketBatchSampler, ParallelDataModule


def _files(tmp_path):
    s, t = tmp_path / "s.txt", tmp_path / "t.txt"
    s.write_text("".join(" ".join(["w"] * (n % 7)) + "\n" for n in range(50)))
    t.write_text("".join(" ".join(["V"] * (n % 4)) + "\n" for n in range(50)))
    return s, t


def test_datamodule_batches_and_epochs(tmp_path):
    s, t = _files(tmp_path)
    dm = ParallelDataModule(str(s), str(t), lowercase=True, max_tokens=24, seed=5)
    dm.setup("fit")
    loader = dm.train_dataloader()
    epoch1 = [b.index.tolist() for b in loader]
    epoch2 = [b.index.tolist() for b in loader]
    for ep in (epoch1, epoch2):
        assert sorted(i for b in ep for i in b) == list(range(50))
    assert epoch1 != epoch2 and len(loader) == len(epoch1)
    again = ParallelDataModule(str(s), str(t), lowercase=True, max_tokens=24, seed=5)
    assert [b.index.tolist() for b in again.train_dataloader()] == epoch1  # reproducible
    tgt_tokens = [w for b in dm.predict_dataloader()
                  for w in dm.corpus.tgt_vocab.decode(b.tgt[b.tgt_mask].tolist())]
    assert tgt_tokens == ["v"] * sum(n % 4 for n in range(50))  # lowercased, none lost


def test_datamodule_cache_reused_and_invalidated(tmp_path):
    s, t = _files(tmp_path)
    cache = tmp_path / "cache"
    ParallelDataModule(str(s), str(t), batch_size=8, cache_dir=str(cache)).setup()
    stamp = os.stat(cache / "src_ids.npy").st_mtime_ns
    dm = ParallelDataModule(str(s), str(t), batch_size=8, cache_dir=str(cache))
    dm.setup()
    assert os.stat(cache / "src_ids.npy").st_mtime_ns == stamp  # loaded, not rebuilt
    assert dm.corpus.src_ids.__class__.__name__ == "memmap"
    dm2 = ParallelDataModule(str(s), str(t), batch_size=8, lowercase=True, cache_dir=str(cache))
    dm2.setup()
    assert dm2.corpus.meta["options"]["lowercase"] is True
    assert len(ParallelCorpus.load(cache).tgt_vocab) == 3  # pad, unk, "v"


def test_bucket_sampler_len_matches():
    sl, tl = torch.randint(0, 9, (33,)).numpy(), torch.randint(0, 9, (33,)).numpy()
    sampler = BucketBatchSampler(sl, tl, batch_size=4, max_tokens=16)
    assert len(list(sampler)) == len(sampler)
