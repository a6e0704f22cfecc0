"""EM under Lightning DDP: 2 gloo CPU processes give the same tables as 1 process."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra):
    path = os.pathsep.join([str(HERE), str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", **extra}


def test_two_gloo_processes_give_the_same_tables_as_one(tmp_path):
    worker = str(HERE / "word_ddp_worker.py")
    one = tmp_path / "one.safetensors"
    subprocess.run([sys.executable, worker, str(one), "1"], check=True, env=_env(),
                   timeout=240, capture_output=True)
    two = tmp_path / "two.safetensors"
    port = str(_free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, worker, str(two), "2"],
            env=_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2",
                     NODE_RANK="0", RANK=str(r), LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for r in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err.decode()[-3000:]
    a, b = load_file(str(one)), load_file(str(two))
    assert int(a["batches"]) >= 4  # both ranks had work
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-7, msg=name)
