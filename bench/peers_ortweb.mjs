// ONNX Runtime Web's WASM backend under Node: one (model, threads) cell for bench/peers.py.
//
//     node bench/peers_ortweb.mjs SPEC.json
//
// SPEC.json: {"model": "m.onnx", "threads": 1, "warmup": 2, "repeat": 20, "budget_s": 8,
//             "inputs": [{"name", "dtype": "float32"|"int64", "shape": [...], "file"}],
//             "output_file": "out.bin", "clock": "wall"|"cpu"}
// Each input file holds the tensor's raw little-endian bytes in C order. Prints one JSON
// line: {"cold_ms", "median_ms", "runs", "peak_rss_mb", "wasm"}; writes the first output's
// raw float32 bytes to output_file so the caller can check the numbers. With "clock": "cpu"
// (one thread), "median_ms" is the main thread's CPU time per run, the mean over the timed
// runs (/proc ticks of 10 ms): the process's own CPU time also counts a second thread that
// took as much again here, and the main thread's matched a quiet machine's wall time
// (MiniLM int8: 61.5-63.3 ms at load 10 against 61.5 ms quiet).
// onnxruntime-web is installed by `npm install --prefix bench/.peers onnxruntime-web`.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(new URL('./.peers/', import.meta.url));
const ort = require('onnxruntime-web');

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array };

function loadInput({ name, dtype, shape, file }) {
  const bytes = readFileSync(file);
  const Array_ = ARRAYS[dtype];
  if (!Array_) throw new Error(`input ${name}: unsupported dtype ${dtype}`);
  const data = new Array_(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array_.BYTES_PER_ELEMENT);
  return [name, new ort.Tensor(dtype, data.slice(), shape)];
}

// CPU ms the main thread has used (utime + stime in 10 ms ticks).
function mainThreadMs() {
  const fields = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8')
    .split(') ')[1].split(' ');
  return 10 * (Number(fields[11]) + Number(fields[12]));
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// VmHWM, not process.resourceUsage().maxRSS, which survives exec and so reports the size of
// the Python process that spawned this one.
function peakRssMb() {
  const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : null;
}

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
ort.env.wasm.numThreads = spec.threads;
ort.env.wasm.simd = true;
const feeds = Object.fromEntries(spec.inputs.map(loadInput));

let start = performance.now();
const session = await ort.InferenceSession.create(spec.model, { executionProviders: ['wasm'] });
let result = await session.run(feeds);
const coldMs = performance.now() - start;

for (let i = 1; i < spec.warmup; i++) await session.run(feeds);
const times = [];
const cpuStart = mainThreadMs();
const deadline = performance.now() + 1000 * spec.budget_s;
while (times.length < spec.repeat && (times.length < 3 || performance.now() < deadline)) {
  start = performance.now();
  result = await session.run(feeds);
  times.push(performance.now() - start);
}
const cpuMs = (mainThreadMs() - cpuStart) / times.length;
const first = result[session.outputNames[0]];
writeFileSync(spec.output_file, Buffer.from(first.data.buffer, first.data.byteOffset,
                                            first.data.byteLength));
console.log(JSON.stringify({
  cold_ms: coldMs,
  median_ms: spec.clock === 'cpu' ? cpuMs : median(times),
  runs: times.length,
  peak_rss_mb: peakRssMb(),
  version: ort.env.versions?.web ?? null,
}));
await session.release();
