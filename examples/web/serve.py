"""The live digits demo: build the page and its model, then serve them on localhost.

    make demo-web        (or: .venv/bin/python examples/web/serve.py [--port 8000])

It exports the shipped digits classifier with ``target="web"`` (``digits.wasm`` plus the
``wasmnn.js`` loader) into ``build/web/`` beside this page, its script and its Web Worker,
and serves that folder on 127.0.0.1 only. Open the printed address and draw a digit.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "digits"))

import modelc  # noqa: E402
from model import load_trained  # noqa: E402

PAGE_FILES = ("index.html", "app.js", "worker.js")


def build_site(folder: Path) -> Path:
    """Write the page, its scripts, ``digits.wasm`` and ``wasmnn.js`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in PAGE_FILES:
        shutil.copyfile(HERE / name, folder / name)
    modelc.export(load_trained(), {"input0": np.zeros((1, 64), np.float32)},
                  folder / "digits.wasm", target="web")
    return folder


class Handler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".wasm": "application/wasm"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8000, help="default: %(default)s")
    parser.add_argument("--out", type=Path, default=Path("build") / "web",
                        help="where the site is built (default: %(default)s)")
    args = parser.parse_args()
    folder = build_site(args.out)
    server = ThreadingHTTPServer(("127.0.0.1", args.port),
                                 functools.partial(Handler, directory=str(folder)))
    print(f"serving {folder} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
