// The page side of bench/browser.py: wasmnn.js and ONNX Runtime Web's WASM backend on the
// same model and inputs in one page, timed in alternating rounds so that both see the same
// machine load. Served from a folder holding model-*.wasm, wasmnn.js, model.onnx, the
// inputs' raw bytes and onnxruntime-web's dist files under ort/.
import * as wasmnn from "./wasmnn.js";
import * as ort from "./ort/ort.wasm.min.mjs";

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array };

async function readInputs(inputs) {
  const feeds = {};
  for (const { name, dtype, shape, file } of inputs) {
    const bytes = await (await fetch(file)).arrayBuffer();
    feeds[name] = { data: new ARRAYS[dtype](bytes), shape, dtype };
  }
  return feeds;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function wasmnnRunner(file, feeds) {
  const model = await wasmnn.load(file);
  const given = Object.fromEntries(Object.entries(feeds).map(([n, f]) => [n, { data: f.data, shape: f.shape }]));
  return async () => Object.values(model.runSync(given))[0].data;
}

async function ortRunner(feeds) {
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
  const session = await ort.InferenceSession.create("model.onnx", { executionProviders: ["wasm"] });
  const tensors = Object.fromEntries(Object.entries(feeds).map(
    ([n, f]) => [n, new ort.Tensor(f.dtype, f.data, f.shape)]));
  return async () => Object.values(await session.run(tensors))[0].data;
}

// spec: {runners: ["wasmnn-simd128", "wasmnn-relaxed", "ortweb"], inputs, warmup, repeat,
// budget_s}. Returns {runner: {cold_ms, median_ms, runs, output: [first 64 values]}}.
export async function bench(spec) {
  const feeds = await readInputs(spec.inputs);
  const runners = {};
  const results = {};
  for (const name of spec.runners) {
    const start = performance.now();
    runners[name] = name === "ortweb" ? await ortRunner(feeds)
      : await wasmnnRunner(`model-${name.split("-")[1]}.wasm`, feeds);
    const output = await runners[name]();
    results[name] = { cold_ms: performance.now() - start, times: [],
                      output: Array.from(output.slice(0, 64)) };
    for (let i = 1; i < spec.warmup; i++) await runners[name]();
  }
  const deadline = performance.now() + 1000 * spec.budget_s;
  for (let round = 0; round < spec.repeat && (round < 3 || performance.now() < deadline); round++) {
    for (const name of spec.runners) {
      const start = performance.now();
      await runners[name]();
      results[name].times.push(performance.now() - start);
    }
  }
  for (const result of Object.values(results)) {
    result.median_ms = median(result.times);
    result.runs = result.times.length;
    delete result.times;
  }
  return results;
}
