"""A headless Debian Chromium driven by Playwright, and a localhost server for the pages.

Skips with the reason when Chromium or Playwright is missing (``make test`` installs both:
Debian's ``chromium`` package and Playwright for Python, which drives the system browser;
no browser is downloaded).
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest

DEMO = Path(__file__).parents[2] / "examples" / "web" / "serve.py"

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
"""Headless flags for a machine without a network: no background connections."""


def demo_module() -> ModuleType:
    """``examples/web/serve.py``: the demo's site builder and request handler."""
    spec = importlib.util.spec_from_file_location("web_demo_serve", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class QuietHandler(demo_module().Handler):  # type: ignore[misc]
    """The demo's handler (module scripts and wasm MIME types), without logging."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def demo() -> ModuleType:
    return demo_module()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("Debian's chromium is not installed (make test installs it with apt-get)")
    return path


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright for Python is not installed (test extra)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """``(folder, base_url)``: a folder served on 127.0.0.1 for the whole session."""
    root = tmp_path_factory.mktemp("site")
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    page = browser.new_page()  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    page.close()
    assert not errors, f"uncaught errors in the page: {errors}"
