"""Does wasmtime turn any wasm int8 dot product into VNNI's ``vpdpbusd`` on this host? (issue #14)

    .venv/bin/python bench/vnni_probe.py

Cranelift has an AVX-VNNI / AVX512-VNNI ``vpdpbusd`` fold (the ``has_avx_vnni`` and
``has_avx512vnni`` settings, detected from the host), but it matches one CLIF tree: the
pairwise sum of two i32x4 pairwise sums of ``i8 x u8`` products widened to i16. This script
compiles each wasm form of a 4-way int8 dot-accumulate that could reach it, under the
default engine and with each VNNI setting forced on, and prints the vector instructions
cranelift emitted (``Module.serialize()`` disassembled by binutils' ``objdump``). When a
wasmtime upgrade makes one of them a ``vpdpbusd``, the int8 tiles can move onto it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import wasmtime

FORMS = {
    "i32x4.relaxed_dot_i8x16_i7x16_add_s": "i32x4.relaxed_dot_i8x16_i7x16_add_s "
                                           "(local.get 0) (local.get 1) (local.get 2)",
    "extend_s x extend_u, extadd_pairwise": """i32x4.add (local.get 2)
       (i32x4.add
         (i32x4.extadd_pairwise_i16x8_s (i16x8.mul (i16x8.extend_low_i8x16_s (local.get 0))
                                                   (i16x8.extend_low_i8x16_u (local.get 1))))
         (i32x4.extadd_pairwise_i16x8_s (i16x8.mul (i16x8.extend_high_i8x16_s (local.get 0))
                                                   (i16x8.extend_high_i8x16_u (local.get 1)))))""",
    "i32x4.dot_i16x8_s on widened operands": """i32x4.add (local.get 2)
       (i32x4.add
         (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get 0))
                            (i16x8.extend_low_i8x16_u (local.get 1)))
         (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get 0))
                            (i16x8.extend_high_i8x16_u (local.get 1))))""",
}
SETTINGS = {"host default": (), "has_avx_vnni": ("has_avx_vnni",),
            "has_avx512vnni": ("has_avx512vnni",)}


def vector_instructions(body: str, flags: tuple[str, ...]) -> list[str]:
    """The distinct vector mnemonics cranelift emits for ``(v128, v128, v128) -> v128 body``."""
    config = wasmtime.Config()
    for flag in flags:
        config.cranelift_flag_enable(flag)
    wat = f'(module (func (export "f") (param v128 v128 v128) (result v128) ({body})))'
    code = wasmtime.Module(wasmtime.Engine(config), wat).serialize()
    with tempfile.NamedTemporaryFile(suffix=".o", delete=False) as handle:
        handle.write(code)
    try:
        listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", handle.name],
                                 capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(handle.name)
    mnemonics = {line.split("\t")[-1].split()[0] for line in listing.splitlines()
                 if "\t" in line and line.split("\t")[-1].strip()}
    return sorted(m for m in mnemonics if m.startswith(("vp", "p")) and m not in ("push", "pop"))


def main() -> None:
    for form, body in FORMS.items():
        print(form)
        for setting, flags in SETTINGS.items():
            found = vector_instructions(body, flags)
            mark = "VNNI" if "vpdpbusd" in found else "no VNNI"
            print(f"  {setting:<16}{mark:<9}{' '.join(found)}")


if __name__ == "__main__":
    main()
