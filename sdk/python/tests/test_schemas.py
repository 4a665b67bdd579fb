"""The schemas shipped inside the installed package are the repository's own, byte for byte
(the package copies them at build time; a stale install would speak an old contract)."""

import os

import pytest

from sandboxd import _schema

from conftest import REPO


@pytest.mark.parametrize("name", ["api.capnp", "events.capnp"])
def test_shipped_schema_equals_the_repository_schema(name: str) -> None:
    original = os.path.join(REPO, "schemas", name)
    shipped = os.path.join(_schema.SCHEMA_DIR, name)
    assert os.path.isfile(shipped), f"{shipped} is not in the installed package"
    with open(original, "rb") as a, open(shipped, "rb") as b:
        assert a.read() == b.read(), f"{shipped} differs from {original}: reinstall the SDK"


def test_the_sdk_loads_the_copies_inside_the_package() -> None:
    package = os.path.dirname(os.path.abspath(_schema.__file__))
    assert _schema.SCHEMA_DIR == os.path.join(package, "schemas")
    assert "writeFile" in _schema.api.Sandbox.schema.method_names_inherited
