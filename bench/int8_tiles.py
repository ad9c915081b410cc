"""Inner loops of three int8 tile designs under wasmtime, on operands that stay in L1 (issue #14).

    .venv/bin/python bench/int8_tiles.py [--repeat 7] [--opt-level speed]

Each design runs the k loop of one tile over k = 384 (96 steps of 4), again and again over
the same packed operands, and its accumulators are checked against numpy's product:

- ``i16``: the ``simd128`` qlinear tile (``templates/qlinear_tile.py``): 2 rows by 8 columns,
  A and W widened to i16 beforehand, per step 6 loads, 8 ``i32x4.dot_i16x8_s`` and 8 adds;
- ``i7-load``: ``i32x4.relaxed_dot_i8x16_i7x16_add_s``, 4 rows by 8 columns, A as int8 with
  each step's 4 values stored 4 times (one plain load per row and step), W as 7-bit values
  (int8 weights in [-64, 63] plus 64: the relaxed dot's second operand must be 7-bit for an
  exact result on every engine; the 64 * rowsum(A) it adds is subtracted once per row);
- ``i7-shuffle``: the same dot, A loaded once per 4 steps and each step's 4 bytes splat to
  every lane by an ``i8x16.shuffle`` (one ``pshufd``).

Products a second are reported as GOPS (2 per multiply-add), medians of interleaved rounds in
thread CPU time, with the load average. Nothing is asserted but the results.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import wasmtime

STEPS = 96
"""Steps of 4 k per call (k = 384, MiniLM's model width)."""
W_AT, A_AT, OUT_AT, A_ROW = 0x10000, 0x20000, 0x40000, 0x4000
# The designs: (rows of the tile, bytes of W per step)
DESIGNS = {"i16": (2, 64), "i7-load": (4, 32), "i7-shuffle": (4, 32)}


def _dot(design: str, a: str, w: str, acc: str) -> str:
    if design == "i16":
        return f"(i32x4.add (local.get {acc}) (i32x4.dot_i16x8_s (local.get {a}) (local.get {w})))"
    return (f"(i32x4.relaxed_dot_i8x16_i7x16_add_s (local.get {a}) (local.get {w}) "
            f"(local.get {acc}))")


def _step(design: str, sub: int) -> list[str]:
    """One step of 4 k (``sub`` of the 4 an ``i7-shuffle`` iteration holds)."""
    rows, w_bytes = DESIGNS[design]
    panels = w_bytes // 16
    out = [f"(local.set $w{j} (v128.load offset={w_bytes * sub + 16 * j} (local.get $pw)))"
           for j in range(panels)]
    for r in range(rows):
        if design == "i7-shuffle":
            lanes = " ".join(str(4 * sub + b) for _ in range(4) for b in range(4))
            out.append(f"(local.set $a (i8x16.shuffle {lanes} (local.get $x{r}) "
                       f"(local.get $x{r})))")
        else:
            out.append(f"(local.set $a (v128.load (local.get $pa{r})))")
        for j in range(panels):
            acc = f"$c{r * panels + j}"
            out.append(f"(local.set {acc} {_dot(design, '$a', f'$w{j}', acc)})")
    return out


def _function(design: str) -> str:
    rows, w_bytes = DESIGNS[design]
    accumulators = rows * (w_bytes // 16)
    unroll = 4 if design == "i7-shuffle" else 1
    body = [f"(local.set $x{r} (v128.load (local.get $pa{r})))" for r in range(rows)
            if design == "i7-shuffle"]
    for sub in range(unroll):
        body += _step(design, sub)
    body.append(f"(local.set $pw (i32.add (local.get $pw) (i32.const {w_bytes * unroll})))")
    body += [f"(local.set $pa{r} (i32.add (local.get $pa{r}) (i32.const 16)))"
             for r in range(rows)]
    v128 = " ".join(f"(local ${n} v128)" for n in (
        [f"c{i}" for i in range(accumulators)] + [f"w{j}" for j in range(w_bytes // 16)]
        + [f"x{r}" for r in range(rows)] + ["a"]))
    pointers = " ".join(f"(local $pa{r} i32)" for r in range(rows))
    starts = " ".join(f"(local.set $pa{r} (i32.const {A_AT + A_ROW * r}))" for r in range(rows))
    stores = " ".join(f"(v128.store offset={OUT_AT + 16 * i} (i32.const 0) (local.get $c{i}))"
                      for i in range(accumulators))
    zero = " ".join(f"(local.set $c{i} (v128.const i64x2 0 0))" for i in range(accumulators))
    return f"""(func (export "{design}") (param $reps i32) {v128} (local $pw i32) {pointers}
      (local $s i32)
      (loop $rep
        {zero} (local.set $pw (i32.const {W_AT})) {starts}
        (local.set $s (i32.const {STEPS // unroll}))
        (loop $k {' '.join(body)}
          (br_if $k (local.tee $s (i32.sub (local.get $s) (i32.const 1)))))
        (br_if $rep (local.tee $reps (i32.sub (local.get $reps) (i32.const 1)))))
      {stores})"""


def _operands(design: str, a: np.ndarray, w: np.ndarray) -> tuple[bytes, list[bytes]]:
    """W's packed bytes and each row's packed bytes, for ``design``. ``a`` (rows, k) uint8,
    ``w`` (8, k) int8 in [-64, 63]."""
    steps = a.shape[1] // 4
    if design == "i16":
        # step s: columns (2j, 2j + 1) by 4 k as 8 i16, j < 4; A's 4 values twice, as i16
        panel = w.astype(np.int16).reshape(4, 2, steps, 4).transpose(2, 0, 1, 3)
        rows = [np.tile(row.astype(np.int16).reshape(steps, 1, 4), (1, 2, 1)).tobytes()
                for row in a]
        return panel.tobytes(), rows
    # step s: columns 4j .. 4j + 3 by 4 k as bytes, j < 2, each weight plus 64; A as int8
    # (uint8 minus 128), each step's 4 bytes 4 times (i7-load) or once (i7-shuffle)
    panel = (w.astype(np.int16) + 64).astype(np.uint8)
    panel = panel.reshape(2, 4, steps, 4).transpose(2, 0, 1, 3)
    signed = (a.astype(np.int16) - 128).astype(np.int8).reshape(len(a), steps, 1, 4)
    copies = 4 if design == "i7-load" else 1
    return panel.tobytes(), [np.tile(row, (1, copies, 1)).tobytes() for row in signed]


def _expected(design: str, a: np.ndarray, w: np.ndarray, got: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """numpy's (rows, 8) product, in ``design``'s terms, and the accumulators read back
    as the same (rows, 8) array."""
    rows = DESIGNS[design][0]
    if design == "i16":
        # accumulator j of row r: lanes (2j, 2j+1) by 2 pair sums each
        pairs = got.reshape(rows, 4, 2, 2).sum(3).reshape(rows, 8)
        return a[:rows].astype(np.int64) @ w.T.astype(np.int64), pairs
    signed = a[:rows].astype(np.int64) - 128
    return signed @ (w.T.astype(np.int64) + 64), got.reshape(rows, 8)


def tile_gops(repeat: int = 7, reps: int = 20000, opt_level: str = "speed") -> dict[str, float]:
    """Each design's GOPS (2 per multiply-add), the median over ``repeat`` interleaved
    rounds of ``reps`` k loops in thread CPU time, its accumulators checked against numpy."""
    config = wasmtime.Config()
    config.cranelift_opt_level = opt_level
    engine = wasmtime.Engine(config)
    store = wasmtime.Store(engine)
    source = "(module (memory (export \"memory\") 8)\n" + "\n".join(
        _function(d) for d in DESIGNS) + ")"
    exports = wasmtime.Instance(store, wasmtime.Module(engine, source), []).exports(store)
    loops = {d: exports[d] for d in DESIGNS}
    memory = exports["memory"]
    assert isinstance(memory, wasmtime.Memory)
    view = np.ctypeslib.as_array(memory.data_ptr(store), (memory.data_len(store),))
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (4, 4 * STEPS), np.uint8)
    w = rng.integers(-64, 64, (8, 4 * STEPS), np.int8)
    times: dict[str, list[float]] = {d: [] for d in DESIGNS}
    for round_ in range(repeat + 1):
        for design in DESIGNS:
            panel, rows = _operands(design, a, w)
            view[W_AT:W_AT + len(panel)] = np.frombuffer(panel, np.uint8)
            for r, row in enumerate(rows):
                view[A_AT + A_ROW * r:A_AT + A_ROW * r + len(row)] = np.frombuffer(row, np.uint8)
            start = time.thread_time()
            loop = loops[design]
            assert isinstance(loop, wasmtime.Func)
            loop(store, reps)
            if round_:
                times[design].append(time.thread_time() - start)
            height, w_bytes = DESIGNS[design]
            end = OUT_AT + height * w_bytes  # rows * (w_bytes / 16) accumulators of 16 bytes
            got = view[OUT_AT:end].view(np.int32).astype(np.int64)
            want, seen = _expected(design, a, w, got)
            if not np.array_equal(want, seen):
                raise SystemExit(f"{design}: the accumulators differ from numpy's product")
    return {design: 2 * height * 8 * 4 * STEPS * reps / statistics.median(times[design]) / 1e9
            for design, (height, _) in DESIGNS.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--reps", type=int, default=20000, help="k loops per call")
    parser.add_argument("--opt-level", default="speed", choices=["none", "speed"])
    args = parser.parse_args()
    gops = tile_gops(args.repeat, args.reps, args.opt_level)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"int8 tile inner loops, k = {4 * STEPS}, opt level {args.opt_level}, load {load}: "
          "GOPS (thread CPU time, median)")
    base = gops["i16"]
    for design, (height, _) in DESIGNS.items():
        print(f"  {design:<11} {height} rows x 8 columns  {gops[design]:6.1f}  "
              f"{gops[design] / base:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
