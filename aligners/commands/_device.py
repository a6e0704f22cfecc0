"""The `--device` flag of the commands: one check, one message (helper, not a subcommand)."""

from __future__ import annotations

from aligners.errors import AlignersInputError

__all__ = ["torch_device"]


def torch_device(name: str):
    """`torch.device(name)`; AlignersInputError when `name` is not a torch device or names
    CUDA where torch sees none. Imports torch."""
    import torch

    try:
        device = torch.device(name)
    except RuntimeError:
        raise AlignersInputError(f"--device: not a torch device: {name!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise AlignersInputError(f"--device {name}: CUDA is not available here")
    return device
