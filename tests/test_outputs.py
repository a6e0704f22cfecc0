"""`aligners.outputs`, the one output rule: same-file refusal (symbolic link, hard link,
relative vs absolute, not yet existing), atomic regular files, write-through devices / FIFOs /
a link's target, one-line write errors with no temporary file left, `.gz`, model folders."""

from __future__ import annotations

import gzip
import os
import stat
import threading
from pathlib import Path

import pytest
import torch

from aligners.errors import AlignersInputError
from aligners.export import read_config, write_model
from aligners.outputs import (
    check_model_dir,
    check_paths,
    flush_stdout,
    open_output,
    write_lines,
)


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def inp(tmp_path) -> Path:
    p = tmp_path / "in.txt"
    p.write_text("0-0 1-1\n")
    return p


# ------------------------------------------------------------------ check_paths


def test_output_equal_to_an_input_is_refused_naming_both_flags(tmp_path, inp, monkeypatch):
    link = tmp_path / "link.txt"
    link.symlink_to(inp)
    hard = tmp_path / "hard.txt"
    os.link(inp, hard)
    monkeypatch.chdir(tmp_path)
    for out in (inp, link, hard, "in.txt", f"./sub/../{inp.name}"):
        if "sub" in str(out):
            (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(AlignersInputError) as err:
            check_paths({"-i": str(inp), "-j": None}, {"-o": str(out)})
        msg = _one_line(err)
        assert "-o" in msg and "-i" in msg and "also an input" in msg
    assert inp.read_text() == "0-0 1-1\n"


def test_two_outputs_on_one_new_file_are_refused(tmp_path):
    new = tmp_path / "new.txt"
    with pytest.raises(AlignersInputError) as err:
        check_paths({}, {"-f": str(new), "-r": str(tmp_path / "." / "new.txt")})
    assert "-f" in _one_line(err) and "-r" in str(err.value) and "also an output" in str(err.value)
    link = tmp_path / "dangling"
    link.symlink_to(new)  # resolves to the same (missing) file
    with pytest.raises(AlignersInputError):
        check_paths({}, {"-f": str(new), "-r": str(link)})
    assert not new.exists()


def test_stdin_stdout_and_none_are_skipped_and_dev_null_may_be_shared(tmp_path, inp):
    check_paths({"-i": "-", "-j": None, "-k": str(inp)}, {"-o": "-", "-f": None})
    check_paths({"-i": "/dev/null"}, {"-o": "/dev/null"})
    check_paths({"-i": str(inp)}, {"-o": str(tmp_path / "out.txt")})


@pytest.mark.parametrize("make,needle", [
    (lambda t: t, "is a folder"),
    (lambda t: t / "no" / "such.txt", "does not exist"),
    (lambda t: "/proc/version", "cannot write in /proc"),
    (lambda t: "/proc/xyz", "cannot write in /proc"),
])
def test_unwritable_outputs_are_refused_before_work(tmp_path, make, needle):
    with pytest.raises(AlignersInputError) as err:
        check_paths({}, {"-o": str(make(tmp_path))})
    assert needle in _one_line(err)
    assert _leftovers(tmp_path) == []  # the probe file is gone


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_read_only_file_is_refused(tmp_path):
    ro = tmp_path / "ro.txt"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    with pytest.raises(AlignersInputError):
        check_paths({}, {"-o": str(ro)})


# ------------------------------------------------------------------ writing


def test_regular_file_is_replaced_atomically_and_keeps_its_mode(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    out.chmod(0o640)
    inode = out.stat().st_ino
    with open_output(str(out)) as f:
        f.write("new 1\n")
        assert out.read_text() == "old\n"  # nothing in place before the block ends
        f.write("new 2\n")
    assert out.read_text() == "new 1\nnew 2\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert out.stat().st_ino != inode  # a new file renamed into place
    assert _leftovers(tmp_path) == []


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_lines(str(tmp_path / "new.txt"), ["a"])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


def test_an_error_inside_the_block_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with open_output(str(out)) as f:
                f.write("partial\n" * 10000)
                raise exc
        assert out.read_text() == "old\n"
        assert _leftovers(tmp_path) == []
    with pytest.raises(RuntimeError):
        with open_output(str(tmp_path / "fresh.txt")) as f:
            f.write("partial\n")
            raise RuntimeError("boom")
    assert not (tmp_path / "fresh.txt").exists() and _leftovers(tmp_path) == []


def test_gz_by_name_round_trips(tmp_path):
    out = tmp_path / "out.pharaoh.gz"
    write_lines(str(out), ["0-0 1-1", "", "2-3"])
    with gzip.open(out, "rt", encoding="utf-8") as f:
        assert f.read() == "0-0 1-1\n\n2-3\n"


def test_symlink_stays_a_link_and_its_target_is_updated(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target.name)
    write_lines(str(link), ["new"])
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text() == "new\n"
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to("made.txt")
    write_lines(str(dangling), ["x"])
    assert dangling.is_symlink() and (tmp_path / "made.txt").read_text() == "x\n"
    assert _leftovers(tmp_path) == []


def test_dev_null_is_written_through_and_stays_a_device():
    write_lines("/dev/null", ("line" for _ in range(50000)))
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_lines(str(fifo), ["a", "b"])
    reader.join(timeout=30)
    assert got == ["a\nb\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_dev_full_is_one_line_and_leaves_nothing(tmp_path):
    with pytest.raises(AlignersInputError) as err:
        write_lines("/dev/full", ("x" * 100 for _ in range(10000)), flag="--out")
    msg = _one_line(err)
    assert msg.startswith("/dev/full: --out: cannot write") and "space" in msg
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_full_disk_removes_the_temporary_file(tmp_path, monkeypatch):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    real_fsync = os.fsync

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(AlignersInputError) as err:
        write_lines(str(out), ["new"])
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert "No space left" in _one_line(err)
    assert out.read_text() == "old\n" and _leftovers(tmp_path) == []


def test_proc_version_is_one_line():
    with pytest.raises(AlignersInputError) as err:
        write_lines("/proc/version", ["x"])
    assert "/proc/version" in _one_line(err)


def test_stdout_full_is_one_line(monkeypatch):
    class Full:
        def write(self, text):
            raise OSError(28, "No space left on device")

        def flush(self):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr("sys.stdout", Full())
    with pytest.raises(AlignersInputError) as err:
        write_lines("-", ["x"])
    assert _one_line(err).startswith("stdout: cannot write")
    with pytest.raises(AlignersInputError):
        flush_stdout()


# ------------------------------------------------------------------ model folders


def _model(folder: Path) -> Path:
    return write_model(folder, kind="test-kind", tensors={"w": torch.ones(2)}, config={"a": 1})


def test_model_folder_new_empty_or_ours_is_accepted(tmp_path):
    check_model_dir(str(tmp_path / "new" / "deeper"), "-o")
    (tmp_path / "empty").mkdir()
    check_model_dir(str(tmp_path / "empty"), "-o")
    check_model_dir(str(_model(tmp_path / "ours")), "--save-model")
    check_model_dir(None, "-o")


def test_model_folder_rules_refuse_what_would_lose_files(tmp_path, inp, monkeypatch):
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("precious\n")
    ours = _model(tmp_path / "ours")
    (ours / "README.txt").write_text("mine\n")
    afile = tmp_path / "afile"
    afile.write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    cases = [(str(user), "not a model folder"), (".", "current folder"),
             (str(tmp_path), "current folder"), (str(ours), "README.txt"),
             (str(afile), "not a folder")]
    for path, needle in cases:
        with pytest.raises(AlignersInputError) as err:
            check_model_dir(path, "--save-model")
        assert needle in _one_line(err) and "--save-model" in str(err.value), path
    holder = tmp_path / "holder"
    holder.mkdir()
    with pytest.raises(AlignersInputError) as err:
        check_model_dir(str(holder), "-o", others={"-s": str(holder / "a.en")})
    assert "holds -s" in _one_line(err)
    with pytest.raises(AlignersInputError):
        check_model_dir("/proc/model", "-o")
    assert (user / "notes.txt").read_text() == "precious\n"


def test_write_model_replaces_ours_atomically_and_refuses_others(tmp_path):
    first = _model(tmp_path / "m")
    (tmp_path / ".m.old").mkdir()  # a user's folder with the name the old code deleted
    (tmp_path / ".m.old" / "keep").write_text("x")
    write_model(first, kind="test-kind", tensors={"w": torch.zeros(3)}, config={"a": 2})
    assert read_config(first)["a"] == 2
    assert (tmp_path / ".m.old" / "keep").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".m.old", "m"]
    user = tmp_path / "user"
    user.mkdir()
    (user / "data.en").write_text("keep\n")
    with pytest.raises(AlignersInputError):
        _model(user)
    assert (user / "data.en").read_text() == "keep\n"
    link = tmp_path / "link"
    link.symlink_to("m")
    write_model(link, kind="test-kind", tensors={"w": torch.zeros(1)}, config={"a": 3})
    assert link.is_symlink() and read_config(tmp_path / "m")["a"] == 3


def test_write_model_failure_keeps_the_old_folder(tmp_path):
    folder = _model(tmp_path / "m")
    with pytest.raises(TypeError):  # not JSON: fails after the tensors were written
        write_model(folder, kind="test-kind", tensors={"w": torch.ones(1)},
                    config={"bad": object()})
    assert read_config(folder)["a"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
