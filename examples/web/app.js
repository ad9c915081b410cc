// The digits demo: draw on the canvas; the model classifies the drawing in a Web Worker.
const pad = document.getElementById("pad");
const ctx = pad.getContext("2d");
const bars = document.getElementById("bars");
const info = document.getElementById("info");
const prediction = document.getElementById("prediction");
const worker = new Worker("worker.js", { type: "module" });
let modelBytes = 0;
let nextId = 0;
let busy = false;
let pending = false;

function clearPad() {
  ctx.fillStyle = "black";
  ctx.fillRect(0, 0, pad.width, pad.height);
  prediction.textContent = "";
  bars.replaceChildren();
}

// The drawing as the model's input: 8x8 cells, each the mean ink in [0, 1] (the scale the
// model was trained on: scikit-learn's 0..16 divided by 16).
function pixels() {
  const image = ctx.getImageData(0, 0, pad.width, pad.height).data;
  const cell = pad.width / 8;
  const out = new Float32Array(64);
  for (let y = 0; y < pad.height; y++) {
    for (let x = 0; x < pad.width; x++) {
      out[Math.floor(y / cell) * 8 + Math.floor(x / cell)] += image[(y * pad.width + x) * 4] / 255;
    }
  }
  return out.map((v) => v / (cell * cell));
}

function classify() {
  if (busy) { pending = true; return; }
  busy = true;
  worker.postMessage({ type: "run", id: nextId++, feeds: { input0: { data: pixels(), shape: [1, 64] } } });
}

function showProbabilities(logits, ms) {
  const max = Math.max(...logits);
  const exps = logits.map((v) => Math.exp(v - max));
  const total = exps.reduce((a, b) => a + b, 0);
  const best = logits.indexOf(max);
  prediction.textContent = String(best);
  bars.replaceChildren(...exps.map((e, digit) => {
    const row = document.createElement("div");
    row.className = digit === best ? "best" : "";
    row.innerHTML = `<span>${digit}</span><i style="width:${(200 * e) / total}px"></i>` +
                    `<small>${((100 * e) / total).toFixed(1)}%</small>`;
    return row;
  }));
    // NOTE: browsers coarsen performance.now() to 0.1 ms in pages that are not
  // cross-origin isolated, so a faster run reads as 0.
  const time = ms > 0 ? `${ms.toFixed(1)} ms` : "under 0.1 ms";
  info.textContent = `model ${(modelBytes / 1024).toFixed(1)} KiB, inference ${time}`;
}

worker.onmessage = ({ data }) => {
  if (data.type === "loaded") {
    modelBytes = data.bytes;
    info.textContent = `model ${(modelBytes / 1024).toFixed(1)} KiB loaded; draw a digit`;
  } else if (data.type === "result") {
    busy = false;
    showProbabilities(Array.from(data.outputs.output0.data), data.ms);
    if (pending) { pending = false; classify(); }
  } else if (data.type === "error") {
    busy = false;
    info.textContent = `${data.name}: ${data.message}`;
  }
};

let drawing = false;
function stroke(event) {
  const box = pad.getBoundingClientRect();
  ctx.lineTo(event.clientX - box.left, event.clientY - box.top);
  ctx.stroke();
}
pad.addEventListener("pointerdown", (event) => {
  drawing = true;
  const box = pad.getBoundingClientRect();
  ctx.beginPath();
  ctx.moveTo(event.clientX - box.left, event.clientY - box.top);
});
pad.addEventListener("pointermove", (event) => { if (drawing) { stroke(event); classify(); } });
window.addEventListener("pointerup", () => { if (drawing) { drawing = false; classify(); } });
document.getElementById("clear").addEventListener("click", clearPad);

ctx.strokeStyle = "white";
ctx.lineWidth = 22;
ctx.lineCap = ctx.lineJoin = "round";
clearPad();
worker.postMessage({ type: "load", url: "digits.wasm" });
