"""A threaded session's model merged with its kernels (``runtime.merge``): one module per
store touches the linear memory; models laid out otherwise run on one thread."""

import warnings

import numpy as np
import pytest
import wasmtime
from wat_models import IDENTITY, METADATA, with_section

import modelc
import nn
import runtime
from runtime.errors import LinkError, ModelFormatError
from runtime.merge import MergeError, merge, sections
from runtime.session import _kernel_wasm
from runtime.threads import splitting
from wasm_kernels import MAX_PAGES, abi, parallel
from wasm_kernels.wasm import Limits, MemoryType, WasmFormatError, read_module

UNARY = "(param i32 i32 i32)"
KERNELS = frozenset({"f32_to_i32", "i32_to_f32", "f32_neg"})


def _threads_engine() -> wasmtime.Engine:
    config = wasmtime.Config()
    config.wasm_threads = True
    config.shared_memory = True
    return wasmtime.Engine(config)


def _model(imports: str, body: str = IDENTITY, memory: str = '(import "env" "memory" (memory 1))',
           extra: str = "") -> bytes:
    wat = f"""(module {memory} {imports}
      (func (export "run") (param $batch i32) (result i32) {body}) {extra})"""
    return with_section(wasmtime.wat2wasm(wat), METADATA)


KERNEL_IMPORTS = "".join(f'(import "{abi.MODULE}" "{n}" (func ${n} {UNARY}))'
                     for n in ("f32_to_i32", "i32_to_f32", "f32_neg"))
# y = -trunc(x) through three kernels: two that do not split, one that does
COUNT = "(i32.mul (local.get $batch) (i32.const 4))"
KERNEL_BODY = (f"(call $f32_to_i32 (i32.const 0) (i32.const 2048) {COUNT}) "
               f"(call $i32_to_f32 (i32.const 2048) (i32.const 1024) {COUNT}) "
               f"(call $f32_neg (i32.const 1024) (i32.const 1024) {COUNT}) (i32.const 0)")


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 8)

    def forward(self, x):
        return self.fc2(nn.functional.relu(self.fc1(x)))


def test_a_model_merges_into_one_valid_module_defining_its_memories_importing_only_wasi():
    np.random.seed(0)
    x = np.random.default_rng(0).standard_normal((300, 64)).astype(np.float32)
    wasm = modelc.export(Mlp().eval(), (x,))
    names = frozenset(i.name for i in read_module(wasm).imports if i.module == abi.MODULE)
    merged = merge(wasm, _kernel_wasm("relaxed", names, shared=True), "relaxed",
                   splitting("relaxed", names))
    wasmtime.Module(_threads_engine(), merged)  # NOTE: raises when invalid
    info = read_module(merged)
    assert not [i for i in info.imports if i.module == abi.MODULE]
    assert {i.module for i in info.imports} <= {"wasi_snapshot_preview1"}
    declared = next(i.type for i in read_module(wasm).imports if i.name == "memory")
    assert info.memories == [MemoryType(Limits(declared.limits.min, MAX_PAGES)),
                             parallel.CONTROL_TYPE]
    exports = {e.name for e in info.exports}
    ours = {*parallel.EXPORTS.values(), *parallel.MEMORY_EXPORTS.values()}
    assert ours <= exports
    assert exports - ours == {e.name for e in read_module(wasm).exports}
    assert info.custom("wasmnn.model") == read_module(wasm).custom("wasmnn.model")


def test_a_threaded_session_equals_one_thread_on_a_model_with_a_kernel_that_does_not_split():
    model = _model(KERNEL_IMPORTS, KERNEL_BODY)
    x = np.arange(-12, 12, dtype=np.float32).reshape(6, 4) * 0.75
    with runtime.load(model, threads=1) as one, runtime.load(model, threads=2) as two:
        assert two.threads == 2
        want = one.run(x)["y"]
        np.testing.assert_array_equal(want, -np.trunc(x))
        np.testing.assert_array_equal(two.run(x)["y"], want)


@pytest.mark.parametrize("model, match", [
    (_model("", memory="(memory 1)"), r"defines a memory"),
    (_model(f'{KERNEL_IMPORTS} (import "w" "late" (func))', KERNEL_BODY),
     r"imports w\.late after its kernels"),
    (_model(f'(import "{abi.MODULE}" "f32_neg" (func (param i32))) ', "(i32.const 0)"),
     r"imports kernel 'f32_neg' as \(i32\) -> \(\)"),
    (_model(f'(import "{abi.MODULE}" "f32_nonesuch" (func (param i32)))', "(i32.const 0)"),
     r"imports kernel 'f32_nonesuch'"),
    (_model("", extra=f'(func (export "{parallel.EXPORTS["reset"]}"))'),
     r"exports 'wasmnn_threads:reset', a name the runtime's threads use"),
    (_model("", extra=f'(func (export "{parallel.MEMORY_EXPORTS["control"]}"))'),
     r"exports 'wasmnn_threads:control', a name the runtime's threads use"),
    (_model('(import "env" "other" (memory 1))'), r"imports the memory env\.other"),
    (_model("", memory=""), r"imports 0 memories; a threaded model imports one"),
    (_model("", memory='(import "env" "memory" (memory 1)) (import "env" "memory" (memory 1))'),
     r"imports 2 memories; a threaded model imports one"),
])
def test_a_model_that_does_not_merge_is_refused_by_merge(model, match):
    with pytest.raises(MergeError, match=match):
        merge(model, _kernel_wasm("relaxed", KERNELS, shared=True),
              "relaxed", frozenset())


def test_a_model_that_does_not_merge_runs_on_one_thread_with_a_warning():
    model = _model(f'{KERNEL_IMPORTS} (import "w" "late" (func))', KERNEL_BODY)
    with pytest.warns(RuntimeWarning, match=r"the model runs on one thread: the model imports "
                                            r"w\.late after its kernels"):
        with pytest.raises(LinkError, match=r"w\.late"):  # NOTE: as on one thread
            runtime.load(model, threads=2)
    defines = _model("", memory="(memory 1)")
    with pytest.raises(ModelFormatError, match=r"does not import its memory as 'env\.memory'"):
        runtime.load(defines, threads=2)


@pytest.mark.parametrize("wasm, match", [
    (b"\0asm\x02\0\0\0", r"not a WebAssembly 1\.0 module"),
    (b"\0asm\x01\0\0\0\x0e\x00", r"unknown section id 14"),
    (b"\0asm\x01\0\0\0\x01\x01\x00\x01\x01\x00", r"a second section 1"),
    (b"\0asm\x01\0\0\0\x01\x05\x00", r"unexpected end of data"),
])
def test_malformed_bytes_are_a_format_error(wasm, match):
    with pytest.raises(WasmFormatError, match=match):
        sections(wasm)


@pytest.mark.parametrize("threads", [2, "auto"])
def test_hostile_bytes_fall_back_to_one_thread_and_fail_there_cleanly(threads):
    truncated = _model(KERNEL_IMPORTS, KERNEL_BODY)[:-40]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NOTE: the format error alone, no thread warning
        with pytest.raises(ModelFormatError, match=r"malformed WebAssembly: unexpected end"):
            runtime.load(truncated, threads=threads)


@pytest.mark.parametrize("body", [
    "(call 11) (i32.const 0)",  # past its own functions: the merged release()
    "(i32.load 1 (i32.const 0))",  # memory 1: the merged model's control memory
])
def test_an_invalid_model_cannot_reach_what_the_merge_adds(body):
    """Validated before merging: code that names a function or memory the model lacks would
    otherwise name the kernels' and the dispatch's once merged."""
    model = _model(KERNEL_IMPORTS, body)
    with pytest.raises(ModelFormatError, match=r"invalid WebAssembly: .*unknown (function|memory)"):
        runtime.load(model, threads=2)
