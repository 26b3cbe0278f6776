"""The library as a wheel file, made from the copy that is running, for a generated project.

A project that ``jsonapi-pyramid-new`` writes installs the very library it was generated from,
with no package index that carries it: the generator writes this wheel into the project's
``wheels/`` folder and the project's Makefile installs with ``--find-links wheels``. The wheel is
made from the installed package's files (a wheel install, an sdist install or a source checkout
alike) and its installed metadata, so it is the same code and the same dependencies; pip checks
its ``RECORD`` when it installs it.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import pathlib
import zipfile

from .. import __version__

__all__ = ["write_wheel"]

NAME = "jsonapi_pyramid"
PACKAGE = pathlib.Path(__file__).resolve().parent.parent
_WHEEL = "Wheel-Version: 1.0\nGenerator: jsonapi-pyramid-new\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files() -> list[pathlib.Path]:
    """Every file of the package, without compiled caches."""
    return sorted(path for path in PACKAGE.rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc", ".pyo"})


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(directory: pathlib.Path) -> pathlib.Path:
    """Write ``jsonapi_pyramid-<version>-py3-none-any.whl`` into ``directory`` and return its path."""
    distribution = importlib.metadata.distribution(NAME)
    info = f"{NAME}-{__version__}.dist-info"
    members: dict[str, bytes] = {}
    for path in _package_files():
        members[f"{NAME}/{path.relative_to(PACKAGE).as_posix()}"] = path.read_bytes()
    members[f"{info}/METADATA"] = (distribution.read_text("METADATA") or "").encode()
    entry_points = distribution.read_text("entry_points.txt")
    if entry_points:
        members[f"{info}/entry_points.txt"] = entry_points.encode()
    for licence in ("licenses/LICENSE", "LICENSE"):
        text = distribution.read_text(licence)
        if text:
            members[f"{info}/licenses/LICENSE"] = text.encode()
            break
    members[f"{info}/WHEEL"] = _WHEEL.encode()
    record = [_record_line(name, data) for name, data in members.items()] + [f"{info}/RECORD,,"]
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{NAME}-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in members.items():
            wheel.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
    return target
