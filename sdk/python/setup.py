"""Packaging hook: copies the repository's schemas/api.capnp and schemas/events.capnp into the
package at build time (a wheel's sandboxd/schemas/, an sdist's tree), so the schemas have
one source of truth. Everything else is in pyproject.toml."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_SCHEMAS = os.path.join(HERE, "..", "..", "schemas")
SCHEMAS = ("api.capnp", "events.capnp")


def copy_schemas(package_dir: str) -> None:
    target = os.path.join(package_dir, "sandboxd", "schemas")
    os.makedirs(target, exist_ok=True)
    for name in SCHEMAS:
        source = os.path.join(REPO_SCHEMAS, name)
        if not os.path.isfile(source):
            # Built from an sdist: the copies are already in the tree.
            source = os.path.join(HERE, "sandboxd", "schemas", name)
        if not os.path.isfile(source):
            raise SystemExit(f"{name} not found in {REPO_SCHEMAS}: build from a sandboxd checkout")
        shutil.copyfile(source, os.path.join(target, name))


class build_py_with_schemas(build_py):
    def run(self) -> None:
        super().run()
        copy_schemas(self.build_lib)


class sdist_with_schemas(sdist):
    def make_release_tree(self, base_dir, files) -> None:  # type: ignore[no-untyped-def]
        super().make_release_tree(base_dir, files)
        copy_schemas(base_dir)


setup(cmdclass={"build_py": build_py_with_schemas, "sdist": sdist_with_schemas})
