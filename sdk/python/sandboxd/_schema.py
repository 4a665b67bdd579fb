"""The Cap'n Proto schemas of sandboxd's API, loaded once from the copies shipped in this
package (``sandboxd/schemas/``, copied from the repository's ``schemas/`` when the package
is built, so the repository's files stay the one source of truth)."""

from __future__ import annotations

import os
from typing import Any

import capnp  # type: ignore[import-untyped]

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")


def _load() -> Any:
    path = os.path.join(SCHEMA_DIR, "api.capnp")
    if not os.path.isfile(path):
        raise ImportError(
            f"{path} is missing: install the package with pip (pip install ./sdk/python), which "
            "copies schemas/api.capnp and schemas/events.capnp into it"
        )
    # api.capnp imports "/capnp/c++.capnp", which pycapnp ships inside its own package.
    capnp_parent = os.path.dirname(os.path.dirname(os.path.abspath(capnp.__file__)))
    return capnp.load(path, imports=[capnp_parent])


api = _load()
