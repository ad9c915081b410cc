// Run a standalone wasmnn model under Node's WASI (V8): .npy on stdin, .npy on stdout.
//   node run_wasi.mjs model.wasm < input.npy > output.npy
import { readFile } from "node:fs/promises";
import { WASI } from "node:wasi";

const path = process.argv[2];
if (!path) {
  console.error("usage: node run_wasi.mjs MODEL.wasm < INPUT.npy > OUTPUT.npy");
  process.exit(2);
}
const wasi = new WASI({ version: "preview1", args: [path], env: {}, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(path));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
