"""WASI through C programs compiled with clang for wasm32-wasi: stdio, args and env, exit
codes, files and directories, clocks, and attempts to escape the preopened directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.errors import Trap
from wasi_intrinsics.wasi import Preopen

NOTCAPABLE = 76
EBADF = 8


def test_stdio_args_env_and_exit_code(run_wasi, wasi_program):
    outcome = run_wasi(wasi_program("stdio"), "7", "two words", stdin=b"shout\n",
                       env={"MODE": "fast"})
    assert outcome.code == 7
    assert outcome.stdout == ("SHOUT\narg 0: prog.wasm\narg 1: 7\narg 2: two words\n"
                              "env: MODE=fast\n")
    assert outcome.stderr == "to stderr\n"


def test_deny_by_default_no_env_and_exit_zero(run_wasi, wasi_program):
    outcome = run_wasi(wasi_program("stdio"))
    assert (outcome.code, outcome.stdout) == (0, "arg 0: prog.wasm\n")


def test_trap_is_a_clean_exception(run_wasi, wasi_program):
    with pytest.raises(Trap, match="wasm trap") as info:
        run_wasi(wasi_program("stdio"), "trap")
    assert info.value.code == "unreachable"


def test_files_and_directories(run_wasi, wasi_program, tmp_path):
    (tmp_path / "input.txt").write_text("first line\n")
    outcome = run_wasi(wasi_program("files"), "/data", preopens=[(str(tmp_path), "/data")])
    assert outcome.code == 0, outcome.stdout
    assert outcome.stdout == ("read: first line\nafter seek: world\npread: hello World\n"
                              "size: 12 regular: 1\nreadlink: moved.txt\nentries: 5\ndone\n")
    assert (tmp_path / "sub" / "moved.txt").read_text() == "hello"
    assert sorted(os.listdir(tmp_path / "sub")) == ["moved.txt"]


def test_clocks_sleep_and_random(run_wasi, wasi_program):
    outcome = run_wasi(wasi_program("clocks"))
    assert outcome.code == 0
    assert outcome.stdout.splitlines() == [
        "realtime after 2020: 1", "slept at least 20ms: 1", "resolution positive: 1",
        "cputime ok: 1", "random differs: 1"]


@pytest.fixture
def jail(tmp_path: Path) -> Path:
    """``tmp/box`` to preopen, next to ``tmp/secret.txt`` it must never reach; inside it,
    links pointing out (``up`` -> ``..``, ``abs`` -> ``/etc``)."""
    box = tmp_path / "box"
    (box / "sub").mkdir(parents=True)
    (box / "inside.txt").write_text("in")
    (tmp_path / "secret.txt").write_text("secret")
    (box / "up").symlink_to("../")
    (box / "abs").symlink_to("/etc")
    return box


def test_escape_attempts_get_enotcapable_and_touch_nothing(run_wasi, wasi_program, jail):
    before = sorted(os.listdir(jail.parent)), sorted(os.listdir(jail))
    outcome = run_wasi(wasi_program("escape"), preopens=[(str(jail), ".")])
    results = dict(line.rsplit(": ", 1) for line in outcome.stdout.splitlines())
    assert results.pop("open inside: open sub/../inside.txt") == "0"
    assert results == {attempt: str(NOTCAPABLE) for attempt in results}
    assert len(results) == 12
    assert (sorted(os.listdir(jail.parent)), sorted(os.listdir(jail))) == before
    assert (jail.parent / "secret.txt").read_text() == "secret"


def test_read_only_preopen_refuses_writes(run_wasi, wasi_program, tmp_path):
    (tmp_path / "input.txt").write_text("first line\n")
    outcome = run_wasi(wasi_program("files"), "/data",
                       preopens=[Preopen(str(tmp_path), "/data", read_only=True)])
    assert outcome.code == 1
    assert outcome.stdout == ("read: first line\n"
                              "FAIL create out.txt: Capabilities insufficient\n")
    assert os.listdir(tmp_path) == ["input.txt"]


def test_no_preopen_means_no_files(run_wasi, wasi_program):
    outcome = run_wasi(wasi_program("files"), "/data")
    assert outcome.code == 1
    assert outcome.stdout.startswith("FAIL fopen input: ")
