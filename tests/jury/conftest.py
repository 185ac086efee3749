"""The fake provider server, as the `fake_provider` fixture for every jury test."""

from tests.support.fake_provider import fake_provider_fixture  # noqa: F401 - registers the fixture
