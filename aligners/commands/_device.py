"""The `--device` and `--threads` flags of the commands: one check, one message each
(helper, not a subcommand)."""

from __future__ import annotations

import os
import sys

from aligners.errors import AlignersInputError

__all__ = ["torch_device", "thread_count", "gpu_present", "auto_device"]


def thread_count(n: int, *, prog: str) -> int:
    """`n` CPU threads, clamped to `os.cpu_count()` with a one-line warning on stderr (more
    threads than cores only slows down, or crashes OpenBLAS). n < 1 raises
    AlignersInputError. Imports nothing."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AlignersInputError(f"--threads must be >= 1, got {n!r}")
    cores = os.cpu_count() or 1
    if n > cores:
        print(f"{prog}: warning: --threads {n} is more than the {cores} CPU cores here; using "
              f"{cores}", file=sys.stderr)
        return cores
    return n


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


def gpu_present() -> bool:
    """Whether torch sees a CUDA device. Without an NVIDIA driver node (/dev/nvidiactl) the
    answer is no without importing torch (the CPU default stays as fast to start)."""
    if not os.path.exists("/dev/nvidiactl"):
        return False
    import torch

    return torch.cuda.is_available()


def auto_device(name: str) -> tuple[str, str]:
    """(device, why) for a `--device` value: "auto" is "cuda" where torch sees a GPU, else
    "cpu"; any other value is kept as given (checked later by `torch_device`)."""
    if name != "auto":
        return name, f"--device {name}"
    return ("cuda", "auto: a GPU is present") if gpu_present() else ("cpu", "auto: no GPU")
