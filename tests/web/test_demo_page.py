"""The live digits page of ``examples/web``: a stroke drawn with the page's own pointer
events is classified by the model in a Web Worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def draw(page: Any, points: list[tuple[float, float]]) -> None:
    """A pointer stroke through ``points`` (fractions of the pad) with the real mouse."""
    box = page.locator("#pad").bounding_box()
    xs = [box["x"] + fx * box["width"] for fx, _ in points]
    ys = [box["y"] + fy * box["height"] for _, fy in points]
    page.mouse.move(xs[0], ys[0])
    page.mouse.down()
    for x, y in zip(xs[1:], ys[1:]):
        page.mouse.move(x, y, steps=8)
    page.mouse.up()


def test_drawing_a_one_shows_a_prediction_with_probabilities(page, site, demo, tmp_path):
    root, url = site
    demo.build_site(root / "demo")
    page.goto(f"{url}/demo/index.html")
    page.wait_for_function("document.getElementById('info').textContent.includes('loaded')")
    draw(page, [(0.5, 0.12), (0.5, 0.5), (0.5, 0.88)])
    page.wait_for_function("document.querySelectorAll('#bars > div').length === 10")
    prediction = page.locator("#prediction").text_content()
    assert prediction is not None and prediction.strip() in [str(d) for d in range(10)]
    shares = [float(t.rstrip("%")) for t in page.locator("#bars small").all_text_contents()]
    assert abs(sum(shares) - 100) < 1.0
    assert int(prediction) == int(np.argmax(shares))
    assert "inference" in (page.locator("#info").text_content() or "")
    page.screenshot(path=str(tmp_path / "demo.png"))
    assert (tmp_path / "demo.png").stat().st_size > 0


def test_the_demo_site_has_the_model_and_loader(site, demo):
    root, _ = site
    folder = demo.build_site(root / "files")
    names = {p.name for p in Path(folder).iterdir()}
    assert {"index.html", "app.js", "worker.js", "digits.wasm", "wasmnn.js"} <= names
