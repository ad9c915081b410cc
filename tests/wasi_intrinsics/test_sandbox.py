"""The capability layer from Python: path resolution, fd table errors, preopens, CLI flags."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.commands.wasi import parse_dir, parse_env
from wasi_intrinsics.wasi import ProcExit, WasiConfig, WasiState
from wasi_intrinsics.wasi.abi import Rights
from wasi_intrinsics.wasi.descriptors import Descriptor, Directory, HostFile
from wasi_intrinsics.wasi.errno import Errno, WasiError
from wasi_intrinsics.wasi.sandbox import resolve


@pytest.fixture
def root(tmp_path: Path):
    (tmp_path / "box" / "a").mkdir(parents=True)
    (tmp_path / "box" / "loop").symlink_to("loop")
    (tmp_path / "box" / "file").write_text("x")
    fd = os.open(tmp_path / "box", os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.mark.parametrize("path,errno,message", [
    ("../x", Errno.ENOTCAPABLE, "leaves its directory"),
    ("a/../../x", Errno.ENOTCAPABLE, "leaves its directory"),
    ("/etc/passwd", Errno.ENOTCAPABLE, "absolute path"),
    ("", Errno.ENOENT, "empty path"),
    ("a\0b", Errno.EINVAL, "contains NUL"),
    ("loop/x", Errno.ELOOP, "too many symlinks"),
    ("file/", Errno.ENOTDIR, "not a directory"),
])
def test_resolve_refuses(root, path, errno, message):
    with pytest.raises(WasiError, match=message) as info:
        with resolve(root, path, follow=True):
            pass
    assert info.value.errno == errno


def test_resolve_stays_below_root(root):
    with resolve(root, "a/./../a/", follow=True) as where:
        assert where.name == "a" and where.trailing_slash
    with resolve(root, "a/..", follow=False) as where:
        assert where.name == "."


def test_fd_table_errors_name_the_fd():
    fds = WasiState().fds
    with pytest.raises(WasiError, match="no open fd 7"):
        fds.get(7, HostFile)
    with pytest.raises(WasiError, match="fd 1 is a Stream, not a Directory") as info:
        fds.get(1, Directory)
    assert info.value.errno == Errno.ENOTDIR
    with pytest.raises(WasiError, match="fd lacks rights") as info:
        fds.get(0, Descriptor, Rights.FD_WRITE)
    assert info.value.errno == Errno.ENOTCAPABLE


def test_preopen_must_exist(tmp_path):
    with pytest.raises(FileNotFoundError):
        WasiState(WasiConfig(preopens=[(str(tmp_path / "missing"), "/")]))


def test_proc_exit_carries_the_code():
    with pytest.raises(ProcExit, match="exited with code 3"):
        raise ProcExit(3)


@pytest.mark.parametrize("spec,message", [("::/x", "expected HOST::GUEST"),
                                          ("nowhere::/x", "'nowhere' does not exist")])
def test_parse_dir_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_dir(spec)


def test_parse_dir_forms(tmp_path):
    assert parse_dir(f"{tmp_path}::/data")[:2] == (str(tmp_path), "/data")
    assert parse_dir(str(tmp_path))[:2] == (str(tmp_path), str(tmp_path))


def test_parse_env():
    assert parse_env("K=a=b") == ("K", "a=b")
    with pytest.raises(ValueError, match="--env 'K': expected K=V"):
        parse_env("K")


def test_cli_runs_a_wasi_command(wasi_program, tmp_path):
    program = tmp_path / "stdio.wasm"
    program.write_bytes(wasi_program("stdio"))
    done = subprocess.run([sys.executable, "-m", "runtime", "wasi", "run", "--dir",
                           f"{tmp_path}::/data", "--env", "K=V", str(program), "9", "x"],
                          input=b"hi\n", capture_output=True)
    assert done.returncode == 9, done.stderr
    assert done.stdout.decode() == (f"HI\narg 0: {program}\narg 1: 9\narg 2: x\nenv: K=V\n")
    assert done.stderr.decode() == "to stderr\n"


def test_cli_reports_a_bad_dir_flag(tmp_path):
    done = subprocess.run([sys.executable, "-m", "runtime", "wasi", "run", "--dir",
                           "nowhere::/x", str(tmp_path / "p.wasm")], capture_output=True)
    assert done.returncode == 7
    assert b"--dir 'nowhere::/x': host directory 'nowhere' does not exist" in done.stderr
