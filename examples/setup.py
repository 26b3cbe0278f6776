"""The repository's applications and tools, never part of the library's distribution.

``jsonapi_blog`` (the reference service) with its entry points (``egg:jsonapi_blog`` in the ini
files, ``jsonapi-pyramid-initdb``) and its own dependencies (argon2-cffi, alembic, waitress), plus
what the repository's test suite, docs and lint gates need (extra ``dev``). The Makefile installs
it next to the library (``pip install -e . -e ./examples[dev]``); a user who installs
``jsonapi_pyramid`` gets none of it.

The packages stay where they are, at the repository's root: this file only lives apart so that the
root's ``setup.py`` builds the library alone.
"""
import pathlib

from setuptools import find_packages, setup

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Every top-level package of the repository except the library itself and the test/bench trees:
# the reference blog and any other example application added next to it.
PACKAGES = find_packages(where=str(ROOT), exclude=["jsonapi_pyramid", "jsonapi_pyramid.*", "tests", "tests.*",
                                                   "bench", "bench.*", "docs", "docs.*", "examples", "examples.*"])

requires = [
    "jsonapi_pyramid[postgresql,docs-ui,observability]",
    # <4: jsonapi_blog/server.py runs waitress's loop itself (server._map, adj, task_dispatcher) and
    # subclasses its task and channel (tests/unit/test_private_names.py, tests/production).
    "waitress>=3,<4",
    "alembic>=1.13",
    # Password hashing for the reference service (argon2id: the OWASP recommendation).
    "argon2-cffi>=23",
]

dev = [
    "jsonapi_pyramid[testing]",
    "pytest>=8",
    "WebTest>=3",
    "jsonschema>=4.20",
    "hypothesis>=6",
    "openapi-spec-validator>=0.7",
    "schemathesis>=4,<5",
    # The browser test drives Debian's chromium through its chromedriver (no browser download).
    "selenium>=4.20",
    # The distribution test: builds the library's wheel and sdist and checks them.
    "build>=1",
    "twine>=5",
    # The documentation site (make docs; built by the tests too).
    "sphinx>=7",
    # A generated Python client's runtime (jsonapi-pyramid-client --lang python): its tests run it
    # against the reference service in-process (httpx's WSGI transport) and type-check it.
    "httpx>=0.27,<1",
    # The lint and type gates of make test (pinned to a minor release: new rules come with new ones).
    "ruff>=0.17,<0.18",
    "mypy>=2.4,<2.5",
]

setup(
    name="jsonapi_blog",
    version="0",
    description="The reference service of jsonapi_pyramid and the repository's tools (not published)",
    package_dir={"": ".."},
    packages=PACKAGES,
    package_data={"jsonapi_blog": ["migrations/*.py", "migrations/versions/*.py", "migrations/script.py.mako"]},
    zip_safe=False,
    python_requires=">=3.11",
    install_requires=requires,
    extras_require={"dev": dev},
    entry_points={
        "paste.app_factory": ["main = jsonapi_blog:main"],
        "paste.server_runner": ["waitress = jsonapi_blog.server:serve"],
        "console_scripts": ["jsonapi-pyramid-initdb = jsonapi_blog.initdb:main"],
    },
)
