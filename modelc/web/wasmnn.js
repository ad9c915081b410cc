// wasmnn.js: run a model exported with `wasmnn export ... --target web` in a page, a Web
// Worker or Node (18+). Dependency-free ES module; it provides the three WASI calls the
// module imports (fd_read, fd_write, proc_exit) itself.
//
//   import * as wasmnn from "./wasmnn.js";
//   const model = await wasmnn.load("model.wasm");
//   model.inputs;   // [{name: "pixels", dtype: "float32", shape: ["batch", 64]}]
//   const out = await model.run({pixels: {data: new Float32Array(64), shape: [1, 64]}});
//   out.output0;    // {data: Float32Array(10), shape: [1, 10], dtype: "float32"}
//
// Errors mirror the Python runtime's: TypeError and ValueError for bad inputs (same
// messages), ModelFormatError for a file that is not a web model, LinkError for imports
// this loader cannot provide, and Trap (with a `code` from the Python runtime's table) when
// the model traps.

const SECTION = "wasmnn.model";
const WASI = "wasi_snapshot_preview1";
const STDERR_LIMIT = 64 * 1024;

const ARRAYS = {
  float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array,
};
const DTYPE_OF = new Map([
  [Float32Array, "float32"], [Float64Array, "float64"], [BigInt64Array, "int64"],
  [Int32Array, "int32"], [Int16Array, "int16"], [Int8Array, "int8"], [Uint8Array, "uint8"],
  [Uint16Array, "uint16"], [Uint32Array, "uint32"], [BigUint64Array, "uint64"],
]);
// numpy's can_cast(from, to, "same_kind") for the typed arrays a page may pass; such inputs
// are converted with a warning, as the Python runtime does.
const SAME_KIND = {
  float32: ["float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"],
  int64: ["int8", "int16", "int32", "uint8", "uint16", "uint32"],
  int32: ["int8", "int16", "int64", "uint8", "uint16", "uint32"],
  bool: [],
};
// V8's trap messages -> the Python runtime's Trap codes and wasmtime's wording of them.
const TRAPS = [
  [/out of bounds|offset is out of bounds/i, "out_of_bounds", "wasm trap: out of bounds memory access"],
  [/unreachable/i, "unreachable", "wasm trap: wasm `unreachable` instruction executed"],
  [/call stack/i, "stack_overflow", "wasm trap: call stack exhausted"],
  [/divide by zero|remainder by zero/i, "division", "wasm trap: integer divide by zero"],
  [/divide result unrepresentable|integer overflow/i, "division", "wasm trap: integer overflow"],
  [/float unrepresentable|convert/i, "conversion", "wasm trap: invalid conversion to integer"],
  [/table|signature mismatch|null function/i, "indirect_call", "wasm trap: indirect call type mismatch"],
];

export class ValueError extends Error {
  constructor(message) { super(message); this.name = "ValueError"; }
}
export class ModelFormatError extends Error {
  constructor(message) { super(message); this.name = "ModelFormatError"; }
}
export class LinkError extends Error {
  constructor(problems) {
    super(`${problems.length} import(s) could not be linked: ${problems.join("; ")}`);
    this.name = "LinkError";
    this.problems = problems;
  }
}
export class Trap extends Error {
  constructor(code, message) { super(message); this.name = "Trap"; this.code = code; }
}

class ProcExit extends Error {
  constructor(code) { super(`the program exited with code ${code}`); this.exitCode = code; }
}

// Python's repr of the values the messages show: 'name', [1, 'batch'].
function repr(value) {
  if (Array.isArray(value)) return `[${value.map(repr).join(", ")}]`;
  return typeof value === "string" ? `'${value}'` : String(value);
}

async function fetchBytes(source) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return source;
  if (typeof Response !== "undefined" && source instanceof Response) {
    return source.arrayBuffer();
  }
  if (typeof source === "string" || source instanceof URL) {
    const response = await fetch(source);
    if (!response.ok) {
      throw new ModelFormatError(`cannot fetch ${String(source)}: HTTP ${response.status}`);
    }
    return response.arrayBuffer();
  }
  throw new TypeError(`expected a URL, bytes or a WebAssembly.Module for the model, got ${
    source === null ? "null" : source.constructor.name}`);
}

function readMetadata(module) {
  const sections = WebAssembly.Module.customSections(module, SECTION);
  if (sections.length !== 1) {
    throw new ModelFormatError(`not a wasmnn model: expected one '${SECTION}' custom section, ` +
                               `found ${sections.length}`);
  }
  let meta;
  try {
    meta = JSON.parse(new TextDecoder().decode(sections[0]));
  } catch (error) {
    throw new ModelFormatError(`model metadata is not valid JSON: ${error.message}`);
  }
  if (!meta.standalone) {
    throw new ModelFormatError("this model imports its kernels from the wasmnn runtime; " +
                               "export it with --target web (or --standalone) for the browser");
  }
  for (const tensor of [...meta.inputs, ...meta.outputs]) {
    if (!(tensor.dtype in ARRAYS)) {
      throw new ModelFormatError(`model metadata: tensor '${tensor.name}' has dtype ` +
                                 `${tensor.dtype}; expected one of ${repr(Object.keys(ARRAYS))}`);
    }
  }
  return meta;
}

// The WASI calls a standalone model imports. run() writes only error messages (fd 2).
function wasiImports(state) {
  const view = () => new DataView(state.memory.buffer);
  return {
    fd_write(fd, iovs, count, written) {
      const dv = view();
      let total = 0;
      for (let i = 0; i < count; i++) {
        const ptr = dv.getUint32(iovs + 8 * i, true);
        const len = dv.getUint32(iovs + 8 * i + 4, true);
        if (fd === 2 && state.stderr.length < STDERR_LIMIT) {
          state.stderr += new TextDecoder().decode(
            new Uint8Array(state.memory.buffer, ptr, Math.min(len, STDERR_LIMIT)));
        }
        total += len;
      }
      dv.setUint32(written, total, true);
      return fd === 1 || fd === 2 ? 0 : 8;  // 8: EBADF
    },
    fd_read(fd, iovs, count, read) {
      view().setUint32(read, 0, true);
      return fd === 0 ? 0 : 8;
    },
    proc_exit(code) { throw new ProcExit(code); },
  };
}

function link(module, state) {
  const provided = { [WASI]: wasiImports(state) };
  const problems = WebAssembly.Module.imports(module)
    .filter(({ module: m, name, kind }) => kind !== "function" || !(provided[m] && name in provided[m]))
    .map(({ module: m, name, kind }) => `${m}.${name}: a ${kind} this loader does not provide`);
  if (problems.length) throw new LinkError(problems);
  return provided;
}

function translateTrap(error) {
  if (error instanceof ProcExit) return new Trap("exit", error.message);
  const isStack = error instanceof RangeError && /call stack/i.test(error.message);
  if (!(error instanceof WebAssembly.RuntimeError) && !isStack) return error;
  for (const [pattern, code, message] of TRAPS) {
    if (pattern.test(error.message)) return new Trap(code, message);
  }
  return new Trap("unknown", error.message);
}

function describe(tensor) {
  return { name: tensor.name, dtype: tensor.dtype, shape: [...tensor.shape] };
}

class Model {
  constructor(module, instance, meta, state) {
    this.metadata = meta;
    this.inputs = meta.inputs.map(describe);
    this.outputs = meta.outputs.map(describe);
    this.dims = meta.dims.map((d) => ({ ...d }));
    this.isa = meta.isa ?? null;
    this._instance = instance;
    this._state = state;
    this._broken = null;
  }

  // Check the feeds against the model: the arrays by name, and each dim's value.
  _bind(feeds) {
    const expected = this.inputs.map((t) => t.name);
    if (ArrayBuffer.isView(feeds) || (feeds && feeds.data !== undefined && feeds.shape)) {
      if (expected.length !== 1) {
        throw new TypeError(`the model has ${expected.length} inputs ${repr(expected)}; pass a dict`);
      }
      feeds = { [expected[0]]: feeds };
    }
    if (feeds === null || typeof feeds !== "object" || Array.isArray(feeds)) {
      throw new TypeError("expected an object of typed arrays (or {data, shape}) or one " +
                          `typed array, got ${feeds === null ? "null" : typeof feeds}`);
    }
    const given = Object.keys(feeds);
    const missing = expected.filter((n) => !given.includes(n));
    const extra = given.filter((n) => !expected.includes(n));
    if (missing.length || extra.length) {
      throw new ValueError(`inputs do not match the model: missing ${repr(missing)}, ` +
                           `unexpected ${repr(extra)}; expected ${repr(expected)}`);
    }
    const ranges = new Map(this.dims.map((d) => [d.name, d]));
    const dims = new Map();
    const arrays = new Map();
    for (const info of this.inputs) {
      const { data, shape } = this._array(info, feeds[info.name]);
      if (shape.length !== info.shape.length) {
        throw new ValueError(`input '${info.name}': expected rank ${info.shape.length} shape ` +
                             `${repr(info.shape)}, got shape ${repr(shape)}`);
      }
      info.shape.forEach((want, axis) => {
        const got = shape[axis];
        if (typeof want === "number") {
          if (want !== got) {
            throw new ValueError(`input '${info.name}': axis ${axis} must be ${want}, got ` +
                                 `${got} (shape ${repr(shape)})`);
          }
          return;
        }
        const dim = ranges.get(want);
        if (!(dim.min <= got && got <= dim.max)) {
          throw new ValueError(`input '${info.name}': axis ${axis} ('${want}') is ${got}, ` +
                               `outside the model's range [${dim.min}, ${dim.max}]`);
        }
        if (dims.has(want) && dims.get(want) !== got) {
          throw new ValueError(`input '${info.name}': axis ${axis} ('${want}') is ${got}, ` +
                               `but another input set '${want}' = ${dims.get(want)}`);
        }
        dims.set(want, got);
      });
      const count = shape.reduce((a, b) => a * b, 1);
      if (data.length !== count) {
        throw new ValueError(`input '${info.name}': shape ${repr(shape)} holds ${count} ` +
                             `values, got ${data.length}`);
      }
      arrays.set(info.name, data);
    }
    return { arrays, dims };
  }

  // One feed -> {data: the dtype's typed array, shape}.
  _array(info, feed) {
    let data = feed;
    let shape = null;
    if (feed && !ArrayBuffer.isView(feed) && typeof feed === "object" && "data" in feed) {
      ({ data, shape } = feed);
      if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
        throw new TypeError(`input '${info.name}': shape must be an array of non-negative ` +
                            `integers, got ${JSON.stringify(shape)}`);
      }
    }
    if (!ArrayBuffer.isView(data) || data instanceof DataView) {
      throw new TypeError(`input '${info.name}': expected a typed array or {data, shape}, got ${
        data === null || data === undefined ? String(data) : data.constructor.name}`);
    }
    const dtype = DTYPE_OF.get(data.constructor);
    const Want = ARRAYS[info.dtype];
    if (dtype !== info.dtype && !(info.dtype === "bool" && dtype === "uint8")) {
      if (!SAME_KIND[info.dtype].includes(dtype)) {
        throw new TypeError(`input '${info.name}': expected dtype ${info.dtype}, got ${dtype} ` +
                            "(no safe conversion)");
      }
      console.warn(`input '${info.name}': converting ${dtype} to ${info.dtype}`);
      const big = info.dtype === "int64";
      data = Want.from(data, (v) => (big ? BigInt(v) : Number(v)));
    }
    return { data, shape: shape ?? this._implicitShape(info, data.length) };
  }

  // The shape of a bare typed array: the model's, with at most one symbolic axis solved.
  _implicitShape(info, length) {
    const symbolic = info.shape.filter((d) => typeof d !== "number");
    const known = info.shape.filter((d) => typeof d === "number").reduce((a, b) => a * b, 1);
    if (symbolic.length > 1 || (symbolic.length === 1 && known === 0)) {
      throw new TypeError(`input '${info.name}': shape ${repr(info.shape)} has several ` +
                          "symbolic dims; pass {data, shape}");
    }
    const solved = symbolic.length ? Math.floor(length / known) : null;
    return info.shape.map((d) => (typeof d === "number" ? d : solved));
  }

  /** Run the model: {name: typed array | {data, shape}} (or one of those) in,
   *  {name: {data, shape, dtype}} out. Throws TypeError / ValueError for bad inputs and
   *  Trap when the model traps (the instance is then replaced on the next run). */
  async run(feeds) {
    return this.runSync(feeds);
  }

  runSync(feeds) {
    const { arrays, dims } = this._bind(feeds);
    if (this._broken) this._reinstantiate();
    const state = this._state;
    const resolve = (info) => info.shape.map((d) => (typeof d === "number" ? d : dims.get(d)));
    const address = this._addresses(dims);
    for (const info of this.metadata.inputs) {
      const shape = resolve(info);
      const count = shape.reduce((a, b) => a * b, 1);
      const Target = ARRAYS[info.dtype];
      new Target(state.memory.buffer, address.get(info.name), count).set(arrays.get(info.name));
    }
    state.stderr = "";
    let status;
    try {
      status = this._instance.exports[this.metadata.entry](...this.dims.map((d) => dims.get(d.name)));
    } catch (error) {
      this._broken = error;
      throw translateTrap(error);
    }
    if (status !== 0) {
      throw new Trap("rejected", state.stderr.trim() || `the model rejected its inputs (${status})`);
    }
    const out = {};
    for (const info of this.metadata.outputs) {
      const shape = resolve(info);
      const count = shape.reduce((a, b) => a * b, 1);
      const Source = ARRAYS[info.dtype];
      const data = new Source(state.memory.buffer, address.get(info.name), count).slice();
      out[info.name] = { data, shape, dtype: info.dtype };
    }
    return out;
  }

  // Where each input and output is for these dims. A model whose memory follows its dims
  // lays out its arena for them (growing memory) in its layout export, as the Python runtime
  // has it do, and writes the addresses that move.
  _addresses(dims) {
    const meta = this.metadata;
    const tensors = [...meta.inputs, ...meta.outputs];
    if (!meta.layout) return new Map(tensors.map((t) => [t.name, t.offset]));
    const args = this.dims.map((d) => dims.get(d.name));
    let status;
    try {
      status = this._instance.exports[meta.layout.entry](...args);
    } catch (error) {
      this._broken = error;
      throw translateTrap(error);
    }
    const view = new DataView(this._state.memory.buffer);
    if (status !== 0) {
      const named = this.dims.map((d) => `'${d.name}': ${dims.get(d.name)}`).join(", ");
      throw new Trap("memory", `the dims {${named}} need ${view.getUint32(meta.layout.need_at, true)} ` +
                     "bytes of memory, more than this engine gives the model");
    }
    return new Map(tensors.map((t) => [
      t.name, t.offset_at === undefined ? t.offset : view.getUint32(t.offset_at, true)]));
  }

  _reinstantiate() {
    const { module } = this._state;
    const state = { module, memory: null, stderr: "" };
    this._instance = new WebAssembly.Instance(module, link(module, state));
    state.memory = this._instance.exports.memory;
    this._state = state;
    this._broken = null;
  }
}

// A module whose one function runs f32x4.relaxed_madd on three zero vectors: it validates
// only where the engine has relaxed SIMD.
function relaxedProbe() {
  const operand = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0x00, ...operand, ...operand, ...operand, 0xfd, 0x85, 0x02, 0x0b];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,
    0x03, 0x02, 0x01, 0x00,
    0x0a, body.length + 2, 0x01, body.length, ...body,
  ]);
}

/** Whether this engine runs modules exported with `--isa relaxed` (relaxed SIMD). */
export const relaxedSimd = WebAssembly.validate(relaxedProbe());

const ISA_PREFERENCE = ["relaxed", "simd128", "scalar"];

// {relaxed, simd128, scalar} -> the fastest build this engine can run.
function pickBuild(builds) {
  const given = Object.keys(builds);
  const unknown = given.filter((isa) => !ISA_PREFERENCE.includes(isa));
  if (unknown.length || !given.length) {
    throw new TypeError(`expected builds keyed by ISA (${ISA_PREFERENCE.join(", ")}), got ` +
                        `keys ${repr(given)}`);
  }
  const usable = ISA_PREFERENCE.filter((isa) => isa in builds && (isa !== "relaxed" || relaxedSimd));
  if (!usable.length) {
    throw new ModelFormatError("this engine lacks relaxed SIMD and no simd128 or scalar build " +
                               "was given");
  }
  return builds[usable[0]];
}

function isBuildChoice(source) {
  return source !== null && typeof source === "object" && !(source instanceof URL) &&
    !(source instanceof WebAssembly.Module) && !(source instanceof ArrayBuffer) &&
    !ArrayBuffer.isView(source) && !(typeof Response !== "undefined" && source instanceof Response);
}

/** Load a model exported with --target web: a URL, a Response, its bytes, or a compiled
 *  WebAssembly.Module; or builds of one model keyed by ISA, `{relaxed: url, simd128: url}`,
 *  of which the fastest this engine runs is loaded (`model.isa` says which). Throws
 *  ModelFormatError (not a web model, or no build this engine can run), LinkError, or a
 *  WebAssembly.CompileError for bytes that are not WebAssembly. */
export async function load(source) {
  const bytes = await fetchBytes(isBuildChoice(source) ? pickBuild(source) : source);
  const module = bytes instanceof WebAssembly.Module ? bytes : await WebAssembly.compile(bytes);
  const meta = readMetadata(module);
  const state = { module, memory: null, stderr: "" };
  const instance = await WebAssembly.instantiate(module, link(module, state));
  if (!(instance.exports.memory instanceof WebAssembly.Memory)) {
    throw new ModelFormatError("the model does not export its memory as 'memory'");
  }
  state.memory = instance.exports.memory;
  return new Model(module, instance, meta, state);
}
