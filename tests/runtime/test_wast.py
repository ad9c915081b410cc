"""The spec-script runner on small inline scripts (the official suite is run by hand; see
tests/runtime/README.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.cli import main
from runtime.errors import ModelFormatError
from runtime.wast import run_script

pytestmark = pytest.mark.skipif(shutil.which("wast2json") is None,
                                reason="wast2json (wabt) is not installed")

PASSING = r"""
(module $M
  (global (export "g") (mut i32) (i32.const 41))
  (func (export "inc") (result i32)
    (global.set 0 (i32.add (global.get 0) (i32.const 1))) (global.get 0))
  (func (export "pair") (param i64 f64) (result i64 f64) (local.get 0) (local.get 1))
  (func (export "nan") (result f32) (f32.div (f32.const 0) (f32.const 0)))
  (func (export "id") (param externref) (result externref) (local.get 0))
  (func (export "null") (result funcref) (ref.null func))
  (func (export "div") (param i32) (result i32) (i32.div_u (i32.const 1) (local.get 0)))
  (func $deep (export "deep") (call $deep)))
(register "M" $M)
(module
  (import "M" "inc" (func $inc (result i32)))
  (import "spectest" "print_i32" (func (param i32)))
  (import "spectest" "memory" (memory 1 2))
  (func (export "inc_twice") (result i32) (drop (call $inc)) (call $inc)))
(assert_return (invoke "inc_twice") (i32.const 43))
(assert_return (get $M "g") (i32.const 43))
(assert_return (invoke $M "pair" (i64.const -1) (f64.const 2.5)) (i64.const -1) (f64.const 2.5))
(assert_return (invoke $M "nan") (f32.const nan:canonical))
(assert_return (invoke $M "id" (ref.extern 7)) (ref.extern 7))
(assert_return (invoke $M "id" (ref.null extern)) (ref.null extern))
(assert_return (invoke $M "null") (ref.null func))
(assert_trap (invoke $M "div" (i32.const 0)) "integer divide by zero")
(assert_exhaustion (invoke $M "deep") "call stack exhausted")
(invoke $M "inc")
(assert_invalid (module (func (result i32))) "type mismatch")
(assert_malformed (module quote "(func (i32.add))x") "unexpected token")
(assert_unlinkable (module (import "spectest" "print_i32" (func (param f32)))) "incompatible")
(assert_unlinkable (module (import "spectest" "memory" (memory 1 1))) "incompatible")
(assert_unlinkable (module (import "M" "missing" (func))) "unknown import")
(assert_trap (module (func $s unreachable) (start $s)) "unreachable")
"""


def write(tmp_path: Path, text: str, name: str = "script.wast") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_command_kind_passes(tmp_path):
    report = run_script(write(tmp_path, PASSING))
    assert [o for o in report.outcomes if o.status != "passed"] == []
    assert report.summary() == "19 passed, 0 failed"


@pytest.mark.parametrize("command, detail", [
    ('(assert_return (invoke "f") (i32.const 2))', r"'f' returned \(1\), expected \('2'\)"),
    ('(assert_trap (invoke "f") "unreachable")',
     r"returned \(1\), expected a trap: 'unreachable'"),
    ('(assert_unlinkable (module (import "spectest" "print" (func))) "unknown import")',
     r"our linker accepted the module, expected 'unknown import'"),
    ('(assert_trap (module (import "nope" "f" (func))) "unreachable")',
     (r"did not link \(1 import\(s\) could not be linked: nope\.f: expected \(\) -> "
      r"\(\), got nothing \(unknown import\)\)")),
    ('(assert_invalid (module (func)) "type mismatch")',
     r"the module was accepted, expected it rejected: 'type mismatch'"),
    ('(module (import "spectest" "print_i32" (func (param i64))))',
     (r"LinkError: 1 import\(s\) could not be linked: spectest\.print_i32: expected "
      r"\(i64\) -> \(\), got \(i32\) -> \(\)")),
])
def test_failures_name_what_happened(tmp_path, command, detail):
    script = '(module (func (export "f") (result i32) (i32.const 1)))\n' + command
    report = run_script(write(tmp_path, script))
    (failure,) = [o for o in report.outcomes if o.status == "failed"]
    assert failure.line == 2
    assert re.search(detail, failure.detail), failure.detail


def test_cli_prints_failures_and_a_closing_count(tmp_path, capsys):
    good = write(tmp_path, PASSING, "good.wast")
    bad = write(tmp_path, '(module (func (export "f") (result i32) (i32.const 1)))\n'
                          '(assert_return (invoke "f") (i32.const 2))', "bad.wast")
    assert main(["wast", str(good)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["good.wast: 19 passed, 0 failed",
                                                         "19 passed, 0 failed"]
    assert main(["wast", str(good), str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == ["bad.wast:2: failed assert_return: 'f' returned (1), expected ('2')",
                        "bad.wast: 1 passed, 1 failed", "20 passed, 1 failed"]


def test_v128_values_and_nan_payloads_pass_as_bits(tmp_path):
    # NOTE: in a subprocess: were a v128 signature to reach wasmtime-py, it would abort.
    path = write(tmp_path, """
      (module (func (export "v") (param v128) (result v128) (local.get 0))
        (func (export "f") (param f32) (result f32) (local.get 0))
        (func (export "d") (param f64) (result f64) (f64.neg (local.get 0)))
        (global (export "g") v128 (v128.const i32x4 0 0 0 0)))
      (assert_return (invoke "v" (v128.const i32x4 1 2 3 0xffffffff))
                     (v128.const i32x4 1 2 3 0xffffffff))
      (assert_return (invoke "v" (v128.const f32x4 nan:0x200000 1 2 3))
                     (v128.const f32x4 nan:0x200000 1 2 3))
      (assert_return (invoke "v" (v128.const f32x4 nan 1 2 3))
                     (v128.const f32x4 nan:canonical 1 2 3))
      (assert_return (invoke "f" (f32.const nan:0x200000)) (f32.const nan:0x200000))
      (assert_return (invoke "f" (f32.const -nan:0x1)) (f32.const -nan:0x1))
      (assert_return (invoke "d" (f64.const nan:0x4000000000000)) (f64.const -nan:0x4000000000000))
      (assert_return (invoke "f" (f32.const nan:0x200000)) (f32.const nan:0x200001))
      (assert_return (get "g") (v128.const i32x4 0 0 0 0))""")
    done = subprocess.run([sys.executable, "-m", "runtime", "wast", "-v", str(path)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "7 passed, 1 failed (1 skipped)"
    assert "failed assert_return: 'f' returned (2141192192), expected ('2141192193')" in (
        done.stdout)
    assert "skipped assert_return: 'g' has a v128 type" in done.stdout


def test_bad_scripts_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no such script: '.*missing\.wast'"):
        run_script(tmp_path / "missing.wast")
    with pytest.raises(ModelFormatError, match=r"wast2json could not convert broken\.wast: "):
        run_script(write(tmp_path, "(module (func $f", "broken.wast"))


SUITE = os.environ.get("WASMNN_SPEC_TESTSUITE")


@pytest.mark.skipif(not SUITE, reason="set WASMNN_SPEC_TESTSUITE to a checkout of "
                                      "WebAssembly/testsuite at 3a04b2cf (tests/runtime/README.md)")
def test_the_spec_core_testsuite_passes_completely():
    scripts = sorted(Path(str(SUITE)).glob("*.wast"))
    assert len(scripts) == 146
    reports = [run_script(script) for script in scripts]
    problems = [f"{r.script}:{o.line}: {o.status} {o.command}: {o.detail}"
                for r in reports for o in r.outcomes if o.status != "passed"]
    assert not problems, "\n".join(problems[:20])
    assert sum(r.count("passed") for r in reports) == 53899
