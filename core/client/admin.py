"""Topic administration: create, delete, list, describe (with start/end offsets), configs."""
from __future__ import annotations

from pylog.core.client.cluster import NetworkClient
from pylog.core.client.consumer import EARLIEST, LATEST, TopicPartition, list_offsets
from pylog.core.client.loop import Closeable, LoopThread
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import ErrorCode, UsageError, error_for_code, error_name

TOPIC_RESOURCE = 2
GROUP_RESOURCE = 32  # Kafka's ConfigResource.Type.GROUP (group configs, KIP-848 and KIP-932)
# DescribeConfigs config_source values
CONFIG_SOURCES = {
    -1: "UNKNOWN", 0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG",
}


def raise_for(code, what, message=None):
    if code:
        detail = message or error_name(code)
        raise error_for_code(code, f"{what}: {detail}")


class AdminBase(Closeable):
    """What the synchronous admin facades share: the resolved client configs, one loop
    thread, one NetworkClient with bootstrap metadata (never auto-creating topics)."""

    _thread_name = "pylog-admin"

    def __init__(self, props: dict | None = None, **overrides):
        props = dict(props or {})
        props.update({k: str(v) for k, v in overrides.items()})
        # admin uses the common client configs; unknown consumer-only keys are ignored
        self.config = CONSUMER_CONFIGS.resolve(props)
        self._loop = LoopThread(self._thread_name)
        self.client = NetworkClient(self.config)
        self.client.allow_auto_create = False
        self._loop.start_with(self.client.refresh_metadata([]))

    def _run(self, coro):
        return self._loop.run(coro)

    def run(self, coro):
        """Run a coroutine of the admin's NetworkClient (`client`) on its loop thread."""
        return self._loop.run(coro)

    def close(self):
        self._loop.close_with(self.client.close(), 5)


class Admin(AdminBase):
    """Topic administration, as Kafka's Admin client does it for topics.

        with Admin({"bootstrap.servers": "127.0.0.1:9092"}) as a:
            a.create_topic("orders", partitions=6)
            start, end = a.offsets("orders", [0, 1])

    CreateTopics, DeleteTopics, Metadata, ListOffsets, DescribeConfigs and
    IncrementalAlterConfigs against the controller or any broker; errors raise
    the Kafka exception for the answer's error code.
    """

    # ------------------------------------------------------------------ topics
    def create_topic(self, name, partitions=1, replication_factor=1, configs=None, validate_only=False,
                     timeout_ms=30000) -> dict:
        body = {
            "topics": [{
                "name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                "assignments": [], "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }],
            "timeout_ms": timeout_ms, "validate_only": validate_only,
        }
        resp = self._run(self.client.request_controller("CreateTopics", body))
        t = resp["topics"][0]
        raise_for(t["error_code"], f"cannot create topic {name}", t.get("error_message"))
        return t

    def delete_topic(self, name, timeout_ms=30000):
        async def go():
            conn = await self.client.any_connection()
            v = conn.version("DeleteTopics")
            if v >= 6:
                body = {"topics": [{"name": name}], "timeout_ms": timeout_ms}
            else:
                body = {"topic_names": [name], "timeout_ms": timeout_ms}
            return await self.client.request_controller("DeleteTopics", body)
        resp = self._run(go())
        r = resp["responses"][0]
        raise_for(r["error_code"], f"cannot delete topic {name}", r.get("error_message"))

    def list_topics(self, include_internal=False) -> dict:
        md = self._run(self.client.refresh_metadata(all_topics=True))
        return {n: t for n, t in sorted(md.topics.items()) if include_internal or not t.internal}

    def describe_topic(self, name):
        md = self._run(self.client.refresh_metadata([name], allow_auto_create=False))
        t = md.topics.get(name)
        if t is None:
            raise error_for_code(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name} does not exist")
        raise_for(t.error_code, f"topic {name}")
        return t

    def offsets(self, topic, partitions) -> tuple[dict, dict]:
        """(start offsets, end offsets) per partition, via ListOffsets to each leader."""
        async def go():
            tps = [TopicPartition(topic, p) for p in partitions]
            start = await list_offsets(self.client, {tp: EARLIEST for tp in tps}, strict=True)
            end = await list_offsets(self.client, {tp: LATEST for tp in tps}, strict=True)
            return ({tp.partition: r.offset for tp, r in start.items()},
                    {tp.partition: r.offset for tp, r in end.items()})
        return self._run(go())

    def describe_configs(self, topic) -> list[dict]:
        body = {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                               "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False}
        resp = self._run(self.client.request_any("DescribeConfigs", body))
        r = resp["results"][0]
        raise_for(r["error_code"], f"cannot describe configs of {topic}", r.get("error_message"))
        out = []
        for c in r["configs"]:
            src = c.get("config_source", -1)
            if src in (-1, None) and "is_default" in c:
                src = 5 if c["is_default"] else 1
            out.append({"name": c["name"], "value": c["value"], "source": CONFIG_SOURCES.get(src, str(src)),
                        "read_only": c.get("read_only", False), "sensitive": c.get("is_sensitive", False)})
        return out

    def alter_configs(self, topic, set_configs: dict, delete_keys=(), validate_only=False):
        async def go():
            conn = await self.client.any_connection()
            if conn.supports("IncrementalAlterConfigs"):
                configs = [{"name": k, "config_operation": 0, "value": v} for k, v in set_configs.items()]
                configs += [{"name": k, "config_operation": 1, "value": None} for k in delete_keys]
                body = {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                                       "configs": configs}], "validate_only": validate_only}
                return await conn.request("IncrementalAlterConfigs", body)
            if delete_keys:
                raise UsageError("the broker has no IncrementalAlterConfigs: cannot delete single configs")
            body = {"resources": [{"resource_type": TOPIC_RESOURCE, "resource_name": topic,
                                   "configs": [{"name": k, "value": v} for k, v in set_configs.items()]}],
                    "validate_only": validate_only}
            return await conn.request("AlterConfigs", body)
        resp = self._run(go())
        r = resp["responses"][0]
        raise_for(r["error_code"], f"cannot alter configs of {topic}", r.get("error_message"))

    def alter_group_configs(self, group: str, set_configs: dict) -> None:
        """Set a group's configs (IncrementalAlterConfigs on the GROUP resource, as
        `kafka-configs.sh --entity-type groups --alter`), e.g. share.auto.offset.reset."""
        configs = [{"name": k, "config_operation": 0, "value": str(v)} for k, v in set_configs.items()]
        body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": configs}],
                "validate_only": False}
        resp = self._run(self.client.request_any("IncrementalAlterConfigs", body))
        r = resp["responses"][0]
        raise_for(r["error_code"], f"cannot alter configs of group {group}", r.get("error_message"))
