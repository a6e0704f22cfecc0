"""QA regressions: bad input to the CLI ends in one `aligners CMD: error: ...` line, exit 2."""

from __future__ import annotations

import gzip

import pytest

from aligners.cli import main


def _fail(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"aligners {argv[0]}: error: "), err
    return err[0]


@pytest.fixture
def links(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("0-0 1-1\n0-0\n")
    return p


def test_truncated_gzip_is_input_error(tmp_path, links, capsys):
    full = gzip.compress(b"0-0\n0-0\n" * 1000)
    bad = tmp_path / "trunc.gz"
    bad.write_bytes(full[: len(full) // 2])
    msg = _fail(["symmetrize", "-c", "union", "-i", str(links), "-j", str(bad)], capsys)
    assert "trunc.gz" in msg and "gzip" in msg


def test_not_gzip_is_input_error(tmp_path, links, capsys):
    bad = tmp_path / "plain.gz"
    bad.write_text("0-0\n0-0\n")
    msg = _fail(["symmetrize", "-c", "union", "-i", str(links), "-j", str(bad)], capsys)
    assert "plain.gz:1" in msg


def test_directory_input_is_input_error(tmp_path, links, capsys):
    msg = _fail(["symmetrize", "-c", "union", "-i", str(tmp_path), "-j", str(links)], capsys)
    assert "directory" in msg


def test_unwritable_output_is_input_error(tmp_path, links, capsys):
    out = tmp_path / "no" / "such" / "dir.txt"
    msg = _fail(
        ["symmetrize", "-c", "union", "-i", str(links), "-j", str(links), "-o", str(out)], capsys
    )
    assert "dir.txt" in msg and "cannot write" in msg
