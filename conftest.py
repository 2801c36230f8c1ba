"""The session's private Redis servers, and the examples of README.md and docs/*.md as tests.

The servers are here, at the root, so that tests/ and the documentation's examples share them.
The examples run with Sybil; tests/support/docs.py says how a page marks what runs and how
`pytest --update-docs` (`make docs-update`) rewrites the output they show.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sybil import Sybil

from tests.support import docs
from tests.support.environment import redis_binary, start_cluster
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-docs",
        action="store_true",
        help="rewrite the output that README.md and docs/*.md show where it differs",
    )


def pytest_configure(config: pytest.Config) -> None:
    docs.UPDATE = bool(config.getoption("--update-docs"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for path in docs.apply_rewrites():
        print(f"\nrewrote the output of examples in {path}")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    # A server that exists but does not start raises, which fails the tests that need it.
    server = RedisServer(redis_binary()).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """The session's cluster, started once when a test asks for it."""
    cluster = start_cluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def docs_services(request: pytest.FixtureRequest) -> docs.Services:
    """The servers an example of the documentation may use, started when it first needs them."""
    return docs.Services(
        server=lambda: request.getfixturevalue("redis_server"),
        cluster=lambda: request.getfixturevalue("redis_cluster"),
    )


pytest_collect_file = Sybil(
    parsers=[docs.PageParser()],
    patterns=["README.md", "docs/*.md"],
    setup=docs.open_page,
    teardown=docs.close_page,
    fixtures=["docs_services"],
).pytest()
