"""A real Kafka broker for Python tests: `EmbeddedBroker`, and pytest fixtures (`pytest_plugin`).

    from pylog.testing import EmbeddedBroker

    with EmbeddedBroker() as kafka:
        kafka.create_topic("orders", partitions=3)
        kafka.produce("orders", [b"a", b"b"])
        assert [r.value for r in kafka.consume("orders")] == [b"a", b"b"]
"""
from pylog.testing.embedded import EmbeddedBroker

__all__ = ["EmbeddedBroker"]
