"""Worker for test_word_ddp: EM under Lightning on `devices` CPU processes (gloo).

Run as `python word_ddp_worker.py OUT DEVICES`; with DEVICES > 1 the caller launches one
process per rank with torchrun-style environment variables (MASTER_ADDR, RANK, ...).
"""

import sys
import warnings

import pytorch_lightning as pl
import torch
from safetensors.torch import save_file
from word_toy import toy_corpus

from aligners.data.bitext import PairIndex
from aligners.data.vocab import WordIds
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner
from aligners.training.hmm import LitWordAligner
from aligners.training.trainer import ddp_strategy


def main(out: str, devices: int) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    src, tgt = toy_corpus(70, seed=4)
    si, ti = WordIds(), WordIds()
    index = PairIndex([si.encode(x) for x in src], [ti.encode(x) for x in tgt],
                      n_src_words=len(si), n_tgt_words=len(ti), cells=150)
    cfg = WordAlignConfig(ibm1_iterations=2, hmm_iterations=2, agreement=True, max_jump=3)
    model = WordAligner.from_index(index, cfg)
    lit = LitWordAligner.from_model(model, index)
    trainer = pl.Trainer(accelerator="cpu", devices=devices,
                         strategy=ddp_strategy("ddp" if devices > 1 else "auto"), max_epochs=4,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, use_distributed_sampler=False)
    trainer.fit(lit)
    if trainer.is_global_zero:
        names = ("t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd", "jump_bwd")
        tensors = {n: getattr(model, n).contiguous() for n in names}
        tensors["loglik"] = torch.tensor(lit.history)
        tensors["batches"] = torch.tensor(len(index))
        save_file(tensors, out)
    # tear the gloo group down on every rank together: leaving it to interpreter exit
    # aborted a rank now and then ("terminate called without an active exception")
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
