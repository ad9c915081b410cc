"""Run the official WASI test suite's preview1 tests through ``wasmnn wasi run``.

Not part of the pytest run (it needs a checkout of the suite, which is never committed):

    python tests/wasi_intrinsics/conformance.py SUITE_DIR [-k SUBSTRING] [-v]

``SUITE_DIR`` is a checkout of WebAssembly/wasi-testsuite at branch ``prod/testsuite-base``
(or any directory below it); every ``*.wasm`` under a ``wasm32-wasip1`` directory is a test.
Each test's ``.json`` spec (absent: the defaults) gives ``args``, ``env``, ``root`` (preopened
as ``/``; a fresh copy per test, so the checkout is never modified), ``exit_code`` and
``stdout`` / ``stderr`` (checked only when given, as the suite's own runner does). Ends with
the line ``N passed, M failed``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TIMEOUT_SECONDS = 60


def find_tests(suite: Path) -> list[Path]:
    """Every preview1 test program below ``suite``, sorted."""
    return sorted(p for p in suite.rglob("*.wasm") if "wasm32-wasip1" in p.parent.parts)


def spec_of(test: Path) -> dict:
    """The test's spec with the suite's defaults filled in."""
    spec = {"args": [], "env": {}, "root": None, "exit_code": 0}
    json_path = test.with_suffix(".json")
    if json_path.exists():
        spec.update(json.loads(json_path.read_text()))
    return spec


def run_one(test: Path) -> str | None:
    """Run one test; ``None`` when it passed, else what went wrong."""
    spec = spec_of(test)
    with tempfile.TemporaryDirectory(prefix="wasi-conformance-") as scratch:
        command = [sys.executable, "-m", "runtime", "wasi", "run"]
        for key, value in spec["env"].items():
            command += ["--env", f"{key}={value}"]
        if spec["root"]:
            root = Path(scratch) / "root"
            shutil.copytree(test.parent / spec["root"], root, symlinks=True)
            command += ["--dir", f"{root}::/"]
        command += [str(test), *spec["args"]]
        try:
            done = subprocess.run(command, capture_output=True, timeout=TIMEOUT_SECONDS,
                                  stdin=subprocess.DEVNULL, cwd=scratch)
        except subprocess.TimeoutExpired:
            return f"timed out after {TIMEOUT_SECONDS} s"
    problems = []
    if done.returncode != spec["exit_code"]:
        problems.append(f"exit code {done.returncode}, expected {spec['exit_code']}")
    for stream, output in (("stdout", done.stdout), ("stderr", done.stderr)):
        if stream in spec and output.decode(errors="replace") != spec[stream]:
            problems.append(f"{stream} {output[:300]!r}, expected {spec[stream][:300]!r}")
    if problems and done.stderr:
        problems.append("stderr: " + done.stderr.decode(errors="replace")[-600:])
    return "; ".join(problems) or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path, help="wasi-testsuite checkout (prod/testsuite-base)")
    parser.add_argument("-k", default="", help="only tests whose path contains this")
    parser.add_argument("-v", action="store_true", help="also list passing tests")
    args = parser.parse_args(argv)
    tests = [t for t in find_tests(args.suite) if args.k in str(t)]
    if not tests:
        print(f"no wasm32-wasip1 tests found under {str(args.suite)!r}", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(run_one, tests))
    for test, problem in zip(tests, outcomes):
        name = f"{test.parent.parent.parent.name}/{test.stem}"
        if problem:
            print(f"FAIL {name}: {problem}")
        elif args.v:
            print(f"pass {name}")
    failed = sum(problem is not None for problem in outcomes)
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
