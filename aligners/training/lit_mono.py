"""Lightning orchestration of the monolingual CRF aligners (the maths stays in the models):
`LitMonoAligner` trains one direction's model (softmax-margin + L2; L-BFGS, Adam or AdamW)
with optional best-epoch selection on held-out pairs. `aligners.training.mono` builds the
Trainer and runs the task.
"""

from __future__ import annotations

from dataclasses import asdict

import pytorch_lightning as pl
import torch

from aligners.config_checks import from_config
from aligners.metrics import evaluate_alignments
from aligners.models.mono.aligner import build_model, predict
from aligners.models.mono.config import MonoConfig, MonoTraining
from aligners.training.baseline import flatten_numbers

__all__ = ["LitMonoAligner"]


class LitMonoAligner(pl.LightningModule):
    """Orchestration only: `model`'s model (MonoConfig) trained with `training` (MonoTraining;
    hparams keep both as dicts): softmax-margin + L2 with L-BFGS (full batch), Adam or AdamW
    (mini-batch; AdamW takes the neural model's parameter groups: `lr` for the scorer,
    `sparse_lr` for the sparse weights, `encoder_lr` for a fine-tuned encoder).
    A training batch is a list of MonoBatches (all of them for L-BFGS); they are moved to the
    module's device with `MonoBatch.to`. With `select` = (examples, gold alignments) the model
    is decoded on them after every epoch and the best epoch's weights (micro F1) are kept:
    `best_state`, `best_epoch`, `select_log`."""

    def __init__(self, model: MonoConfig | dict, training: MonoTraining | dict, *,
                 n_pairs: int, select=None, total_steps: int = 0):
        super().__init__()
        m, t = (from_config(cls, x if isinstance(x, dict) else asdict(x), where)  # checked
                for cls, x, where in ((MonoConfig, model, "model"),
                                      (MonoTraining, training, "training")))
        self.save_hyperparameters({"model": asdict(m), "training": asdict(t),
                                   "n_pairs": n_pairs, "total_steps": total_steps})
        self.settings = t  # (`self.training` is torch's train / eval flag)
        self.automatic_optimization = False
        self.evaluations = 0
        self.select, self.best_state, self.best_epoch, self.best_f1 = select, None, -1, -1.0
        self.select_log: list[float] = []
        self.select_nonident: list[float] = []  # non-identical micro F1 per epoch (reported)
        self.model = build_model(**m.build_settings())
        if t.optimizer == "adamw" and not hasattr(self.model, "trainable_groups"):
            raise ValueError("training.optimizer adamw is for model.kind neural")

    def on_train_epoch_end(self):
        """Dev selection: decode the selection pairs, keep the best epoch's weights."""
        if self.select is None:
            return
        examples, golds = self.select
        out = predict(self.model, examples, batch_size=self.settings.decode_batch)
        self.model.train()
        rep = evaluate_alignments(golds, [set(o[1]) for o in out],
                                  src_tokens=[e.src for e in examples],
                                  tgt_tokens=[e.tgt for e in examples])
        f1 = rep.micro.f1
        nonident = flatten_numbers(rep.to_dict(), sep="/", finite=False).get(
            "breakdown/non-identical/micro/f1", -1.0)
        self.select_log.append(round(float(f1), 5))
        self.select_nonident.append(round(float(nonident), 5))
        print(f"  epoch {self.current_epoch}: selection micro F1 {f1:.4f} (non-identical "
              f"{nonident:.4f})", flush=True)
        if f1 > self.best_f1:
            self.best_f1, self.best_epoch = f1, int(self.current_epoch)
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return [b.to(device) for b in batch]

    def _objective(self, batches) -> float:
        t, n = self.settings, self.hparams.n_pairs
        total = 0.0
        for b in batches:
            loss = self.model.loss(b, cost_weight=t.cost_weight) / n
            self.manual_backward(loss)
            total += loss.item()
        share = sum(len(b.examples) for b in batches) / n
        reg = 0.5 * t.l2 * share * self.model.l2() / n
        self.manual_backward(reg)
        self.evaluations += 1
        if self.evaluations % 10 == 0:
            print(f"  objective evaluation {self.evaluations}: {total + reg.item():.5f}",
                  flush=True)
        return total + reg.item()

    def training_step(self, batches, batch_idx):
        opt = self.optimizers()
        if self.settings.optimizer == "lbfgs":
            def closure():
                opt.zero_grad()
                return torch.tensor(self._objective(batches))
            value = opt.step(closure)
        else:
            opt.zero_grad()
            value = torch.tensor(self._objective(batches))
            opt.step()
            if self.settings.optimizer == "adamw" and self.hparams.total_steps:
                self.lr_schedulers().step()
        self.log("train_loss", float(value), prog_bar=True, batch_size=1, on_step=False,
                 on_epoch=True)

    def configure_optimizers(self):
        hp = self.settings
        if hp.optimizer == "lbfgs":
            return torch.optim.LBFGS(self.model.parameters(), lr=hp.lr, max_iter=hp.max_iter,
                                     history_size=20, line_search_fn="strong_wolfe",
                                     tolerance_grad=1e-6, tolerance_change=1e-8)
        if hp.optimizer == "adamw":
            opt = torch.optim.AdamW(
                self.model.trainable_groups(lr=hp.lr, sparse_lr=hp.sparse_lr,
                                            encoder_lr=hp.encoder_lr),
                lr=hp.lr, weight_decay=hp.weight_decay)
            total = int(self.hparams.total_steps)
            if not total:
                return opt
            # learning rates decay linearly to 0 over the run (stepped in training_step)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / total))
            return [opt], [sched]
        return torch.optim.Adam(self.model.parameters(), lr=hp.lr)
