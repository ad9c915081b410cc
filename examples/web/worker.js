// Runs a wasmnn web model off the main thread. Messages in:
//   {type: "load", url}            -> {type: "loaded", inputs, outputs, bytes}
//   {type: "run", id, feeds}       -> {type: "result", id, outputs, ms}
// and {type: "error", id, name, message, code} when loading or a run fails.
// Start it with: new Worker("worker.js", {type: "module"})
import * as wasmnn from "./wasmnn.js";

let model = null;

self.onmessage = async ({ data: message }) => {
  try {
    if (message.type === "load") {
      const response = await fetch(message.url);
      const bytes = await response.arrayBuffer();
      model = await wasmnn.load(bytes);
      self.postMessage({ type: "loaded", inputs: model.inputs, outputs: model.outputs,
                         bytes: bytes.byteLength });
    } else if (message.type === "run") {
      const start = performance.now();
      const outputs = await model.run(message.feeds);
      const ms = performance.now() - start;
      self.postMessage({ type: "result", id: message.id, outputs, ms },
                       Object.values(outputs).map((o) => o.data.buffer));
    }
  } catch (error) {
    self.postMessage({ type: "error", id: message.id, name: error.name,
                       message: error.message, code: error.code });
  }
};
