"""Client quotas: a consumer and a producer over their byte rates. Throttle times and the bytes
a fetch delivers are compared within a band (`band`); everything else exactly. The quota is
set for (user admin, client id of the scenario), so only the scenario's own connection is
throttled. Rates are sampled in quota.window.num (11) windows of 1 s, so a first burst is
measured over 10 s: 10 KB batches against 10 KB/s are throttled from the 4th fetch on (about
2 s), and a throttled fetch's bytes do not count (the next one gets the same throttle, not a
longer one)."""

BATCH = {"values": ["x" * 1000] * 10}  # ~10 KB
THROTTLE_BAND = [300, 0.25]


def set_quota(key: str, rate: float, client: str) -> list[dict]:
    entity = [{"entity_type": "user", "entity_name": "admin"}, {"entity_type": "client-id", "entity_name": client}]
    return [
        {"api": "AlterClientQuotas", "v": 1, "body": {"entries": [{"entity": entity, "ops": [
            {"key": key, "value": rate, "remove": False}]}], "validate_only": False}},
        # Kafka applies it once the metadata log reaches the broker
        {"api": "DescribeClientQuotas", "v": 1, "body": {"components": [
            {"entity_type": "client-id", "match_type": 0, "match": client}], "strict": False},
         "repeat_until": {"entries.0.values.0.key": key}},
    ]


def produce(v: int, client: str | None = None, band: bool = False) -> dict:
    step = {"api": "Produce", "v": v, "body": {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
                                                "topic_data": [{"name": "q-{u}", "partition_data": [
                                                    {"index": 0, "records": BATCH}]}]}}
    if client:
        step["client_id"] = client
    if band:
        step["band"] = {"throttle_time_ms": THROTTLE_BAND}
    return step


def fetch(v: int, client: str) -> dict:
    return {"api": "Fetch", "v": v, "client_id": client, "body": {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": "q-{u}", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
             "log_start_offset": -1, "last_fetched_epoch": -1}]}], "forgotten_topics_data": [], "rack_id": ""},
        "band": {"throttle_time_ms": THROTTLE_BAND, "delivered_bytes": [0, 0.0]}}


def consumer(v: int) -> dict:
    client = f"qc{v}-{{u}}"
    return {"name": f"quota consumer_byte_rate fetch-v{v}", "topics": {"q-{u}": 1},
            "topic_configs": {"q-{u}": {"retention.ms": -1}},
            "steps": [*set_quota("consumer_byte_rate", 10000.0, client), produce(9), produce(9), produce(9),
                      # 30, 60, 90 KB in the window: within; 120 KB: throttled, answered empty
                      fetch(v, client), fetch(v, client), fetch(v, client), fetch(v, client),
                      # the throttled fetch was not counted: the same throttle again, not a longer one
                      fetch(v, client)]}


def producer(v: int) -> dict:
    client = f"qp{v}-{{u}}"
    return {"name": f"quota producer_byte_rate produce-v{v}", "topics": {"q-{u}": 1},
            "topic_configs": {"q-{u}": {"retention.ms": -1}},
            "steps": [*set_quota("producer_byte_rate", 5000.0, client),
                      # ~10 KB each against 5 KB/s over 10 s: the 6th and 7th are throttled, and the
                      # data is taken (a produce is never answered empty)
                      *[produce(v, client, band=True) for _ in range(7)]]}


SCENARIOS = [consumer(v) for v in (4, 11, 12)] + [producer(v) for v in (3, 9)]
