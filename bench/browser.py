"""wasmnn.js beside ONNX Runtime Web's WASM backend in headless Chromium, in one page run.

    .venv/bin/python bench/browser.py [--models minilm-b1,mlp] [--isa simd128,relaxed]
                                      [--repeat 20] [--budget 20] [--json out.json]

For each model, ``peers.prepare`` writes the inputs, the torch reference output and the ONNX
export; the ``nn`` twin is exported with ``target="web"`` (one module per ``--isa``). A
folder holding those, ``wasmnn.js`` and onnxruntime-web's dist files (``npm install
--prefix bench/.peers onnxruntime-web`` first) is served on 127.0.0.1, and
``bench/browser_bench.mjs`` times both runtimes in the page, one thread each, in alternating
rounds. Prints cold start (load + first run) and median latency, the ratio to ORT-web, and
each runtime's largest difference from torch on the output's first values. The machine is
shared: compare ratios within one run; nothing is asserted.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import peers  # noqa: E402

PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
import { bench } from "./browser_bench.mjs";
window.bench = bench;
window.benchReady = true;
</script>"""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


class Handler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript",
                      ".wasm": "application/wasm"}

    def log_message(self, format: str, *args: object) -> None:
        pass


def build_site(name: str, folder: Path, isas: list[str]) -> dict[str, Any]:
    """Everything the page needs for model ``name`` in ``folder``; returns the page's spec."""
    import modelc

    failed = peers.prepare(name, folder)
    if "ort" in failed:
        raise RuntimeError(f"{name}: the ONNX export failed: {failed['ort']}")
    spec = peers.MODELS[name]
    inputs = dict(np.load(folder / "inputs.npz"))
    reference = peers.torch_model(spec.kind, folder)
    for isa in isas:
        modelc.export(peers.nn_model(spec.kind, reference), inputs,
                      folder / f"model-{isa}.wasm", target="web", isa=isa)
    shutil.copytree(peers.ORTWEB / "dist", folder / "ort")
    shutil.copyfile(BENCH / "browser_bench.mjs", folder / "browser_bench.mjs")
    (folder / "index.html").write_text(PAGE)
    return {"inputs": [{"name": k, "dtype": str(v.dtype), "shape": list(v.shape),
                        "file": f"{k}.bin"} for k, v in inputs.items()]}


def run_page(browser: Any, folder: Path, spec: dict[str, Any]) -> dict[str, Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(Handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = browser.new_page()
        page.set_default_timeout(600_000)
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html")
        page.wait_for_function("window.benchReady === true")
        return page.evaluate("(spec) => window.bench(spec)", spec)
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="minilm-b1,mlp",
                        help=f"comma-separated, from {sorted(peers.MODELS)}")
    parser.add_argument("--isa", default="simd128,relaxed",
                        help="wasmnn kernel variants to run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per model")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if not (peers.ORTWEB / "dist").is_dir():
        print("onnxruntime-web is missing: npm install --prefix bench/.peers onnxruntime-web")
        return 2
    chromium = shutil.which("chromium")
    if chromium is None:
        print("Debian's chromium is missing: apt-get install chromium")
        return 2
    from playwright.sync_api import sync_playwright

    isas = args.isa.split(",")
    results: dict[str, Any] = {}
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as tmp:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        print(f"{browser.version}; medians in ms; ratio = latency / ORT-web's")
        print(f"{'model':<18}{'runtime':<18}{'cold':>9}{'median':>10}{'ratio':>8}"
              f"{'runs':>6}{'max|diff| vs torch':>20}")
        for name in args.models.split(","):
            folder = Path(tmp) / name
            spec = build_site(name, folder, isas)
            spec.update(runners=[f"wasmnn-{i}" for i in isas] + ["ortweb"],
                        warmup=args.warmup, repeat=args.repeat, budget_s=args.budget)
            cells = run_page(browser, folder, spec)
            expected = np.load(folder / "expected.npy").ravel()[:64]
            base = cells["ortweb"]["median_ms"]
            for runner, cell in cells.items():
                diff = float(np.max(np.abs(np.array(cell.pop("output")) - expected)))
                cell.update(ratio=cell["median_ms"] / base, max_diff=diff)
                print(f"{peers.TITLES[name]:<18}{runner:<18}{cell['cold_ms']:>9.1f}"
                      f"{cell['median_ms']:>10.2f}{cell['ratio']:>8.2f}{cell['runs']:>6}"
                      f"{diff:>20.2e}")
            results[name] = cells
        browser.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
