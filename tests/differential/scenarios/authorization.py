"""Authorization matrix: every API pylog serves, sent by each principal holding one single ACL
(resource type x operation, on the wildcard resource) and by one holding none. The answer
expected is Kafka's: each request's error code per resource must match.

Requests name the shared topic `dt`, and a group, transactional id or topic of their own
(`{u}`), so an allowed request changes nothing another scenario looks at.
"""
import uuid

from diff_peers import ACL_PRINCIPALS

T = "dt"
NO_TOPIC = uuid.UUID("6f1d3c5e-0a4b-4d7e-9c2f-8b1a2d3e4f50")  # the share-group state APIs name topics by id
TXN_BATCH = {"values": ["x"], "producer_id": 4242, "producer_epoch": 0, "base_sequence": 0, "transactional": True}

# (label, api, version, body, fields left out of the comparison)
REQUESTS = [
    ("produce", "Produce", 9, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": T, "partition_data": [{"index": 0, "records": {"values": ["p"]}}]}]}),
    ("produce-txn-no-id", "Produce", 9, {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": T, "partition_data": [{"index": 0, "records": TXN_BATCH}]}]}),
    ("produce-txn-id", "Produce", 9, {"transactional_id": "tx-{u}", "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": T, "partition_data": [{"index": 0, "records": TXN_BATCH}]}]}),
    ("fetch", "Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                {"topic": T, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                             "partition_max_bytes": 1 << 20,
                                                             "current_leader_epoch": -1, "log_start_offset": -1,
                                                             "last_fetched_epoch": -1}]}],
                            "forgotten_topics_data": [], "rack_id": ""}),
    ("list-offsets", "ListOffsets", 7, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": T, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}),
    ("metadata-topic", "Metadata", 12, {"topics": [{"name": T, "topic_id": None}],
                                        "allow_auto_topic_creation": False,
                                        "include_topic_authorized_operations": False}),
    ("metadata-missing", "Metadata", 12, {"topics": [{"name": "nx-{u}", "topic_id": None}],
                                          "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False}),
    ("offset-commit", "OffsetCommit", 8, {"group_id": "g-{u}", "generation_id_or_member_epoch": -1,
                                          "member_id": "", "group_instance_id": None, "topics": [
                                              {"name": T, "partitions": [{"partition_index": 0,
                                                                          "committed_offset": 1,
                                                                          "committed_leader_epoch": -1,
                                                                          "committed_metadata": ""}]}]}),
    ("offset-fetch", "OffsetFetch", 8, {"groups": [{"group_id": "g-{u}", "topics": [
        {"name": T, "partition_indexes": [0]}]}], "require_stable": False}),
    ("offset-fetch-v7", "OffsetFetch", 7, {"group_id": "g-{u}", "topics": [{"name": T, "partition_indexes": [0]}],
                                           "require_stable": False}),
    ("find-group-coordinator", "FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["g-{u}"]}),
    ("find-txn-coordinator", "FindCoordinator", 4, {"key_type": 1, "coordinator_keys": ["tx-{u}"]}),
    ("join-group", "JoinGroup", 9, {"group_id": "g-{u}", "session_timeout_ms": 10000,
                                    "rebalance_timeout_ms": 10000, "member_id": "", "group_instance_id": None,
                                    "protocol_type": "consumer", "protocols": [{"name": "range",
                                                                                "metadata": b""}],
                                    "reason": None}),
    ("heartbeat", "Heartbeat", 4, {"group_id": "g-{u}", "generation_id": 1, "member_id": "m",
                                   "group_instance_id": None}),
    ("sync-group", "SyncGroup", 5, {"group_id": "g-{u}", "generation_id": 1, "member_id": "m",
                                    "group_instance_id": None, "protocol_type": "consumer",
                                    "protocol_name": "range", "assignments": []}),
    ("leave-group", "LeaveGroup", 5, {"group_id": "g-{u}", "members": [{"member_id": "m",
                                                                         "group_instance_id": None,
                                                                         "reason": None}]}),
    ("describe-groups", "DescribeGroups", 5, {"groups": ["g-{u}"], "include_authorized_operations": False}),
    ("list-groups", "ListGroups", 4, {"states_filter": []}),
    ("create-topics", "CreateTopics", 7, {"topics": [{"name": "ct-{u}", "num_partitions": 1,
                                                      "replication_factor": 1, "assignments": [], "configs": []}],
                                          "timeout_ms": 10000, "validate_only": True}),
    ("delete-topics", "DeleteTopics", 6, {"topics": [{"name": "nx-{u}", "topic_id": None}], "timeout_ms": 10000}),
    ("delete-records", "DeleteRecords", 2, {"topics": [{"name": "nx-{u}", "partitions": [
        {"partition_index": 0, "offset": 0}]}], "timeout_ms": 10000}),
    ("init-producer-id", "InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000,
                                               "producer_id": -1, "producer_epoch": -1}),
    ("init-producer-id-txn", "InitProducerId", 4, {"transactional_id": "tx-{u}", "transaction_timeout_ms": 60000,
                                                   "producer_id": -1, "producer_epoch": -1}),
    ("offset-for-leader-epoch", "OffsetForLeaderEpoch", 4, {"replica_id": -1, "topics": [
        {"topic": T, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}),
    ("add-partitions-to-txn", "AddPartitionsToTxn", 3, {
        "v3_and_below_transactional_id": "tx-{u}", "v3_and_below_producer_id": 4242,
        "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [{"name": T, "partitions": [0]}]}),
    ("add-offsets-to-txn", "AddOffsetsToTxn", 3, {"transactional_id": "tx-{u}", "producer_id": 4242,
                                                  "producer_epoch": 0, "group_id": "g-{u}"}),
    ("end-txn", "EndTxn", 3, {"transactional_id": "tx-{u}", "producer_id": 4242, "producer_epoch": 0,
                              "committed": False}),
    ("txn-offset-commit", "TxnOffsetCommit", 3, {
        "transactional_id": "tx-{u}", "group_id": "g-{u}", "producer_id": 4242, "producer_epoch": 0,
        "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": [
            {"name": T, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                        "committed_metadata": ""}]}]}),
    ("describe-acls", "DescribeAcls", 3, {"resource_type_filter": 2, "resource_name_filter": "nx-{u}",
                                          "pattern_type_filter": 3, "principal_filter": None, "host_filter": None,
                                          "operation": 1, "permission_type": 1}),
    ("create-acls", "CreateAcls", 3, {"creations": [{"resource_type": 2, "resource_name": "nx-{u}",
                                                     "resource_pattern_type": 3, "principal": "User:zz",
                                                     "host": "*", "operation": 3, "permission_type": 3}]}),
    ("delete-acls", "DeleteAcls", 3, {"filters": [{"resource_type_filter": 2, "resource_name_filter": "nx-{u}",
                                                   "pattern_type_filter": 3, "principal_filter": "User:zz",
                                                   "host_filter": None, "operation": 1, "permission_type": 1}]}),
    ("describe-configs-topic", "DescribeConfigs", 4, {"resources": [
        {"resource_type": 2, "resource_name": T, "configuration_keys": ["retention.ms"]}],
        "include_synonyms": False, "include_documentation": False}),
    ("describe-configs-broker", "DescribeConfigs", 4, {"resources": [
        {"resource_type": 4, "resource_name": "1", "configuration_keys": ["log.retention.ms"]}],
        "include_synonyms": False, "include_documentation": False}),
    ("alter-configs", "AlterConfigs", 2, {"resources": [
        {"resource_type": 2, "resource_name": T, "configs": [{"name": "retention.ms", "value": "604800000"}]}],
        "validate_only": True}),
    ("incremental-alter-configs", "IncrementalAlterConfigs", 1, {"resources": [
        {"resource_type": 2, "resource_name": T, "configs": [{"name": "retention.ms", "config_operation": 0,
                                                              "value": "604800000"}]}], "validate_only": True}),
    ("describe-log-dirs", "DescribeLogDirs", 4, {"topics": [{"topic": T, "partitions": [0]}]}),
    ("create-partitions", "CreatePartitions", 3, {"topics": [{"name": T, "count": 1, "assignments": None}],
                                                  "timeout_ms": 10000, "validate_only": True}),
    ("delete-groups", "DeleteGroups", 2, {"groups_names": ["g-{u}"]}),
    ("offset-delete", "OffsetDelete", 0, {"group_id": "g-{u}", "topics": [{"name": T,
                                                                           "partitions": [{"partition_index": 0}]}]}),
    ("describe-client-quotas", "DescribeClientQuotas", 1, {"components": [], "strict": False}),
    ("alter-client-quotas", "AlterClientQuotas", 1, {"entries": [
        {"entity": [{"entity_type": "client-id", "entity_name": "c-{u}"}],
         "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}], "validate_only": True}),
    ("describe-scram", "DescribeUserScramCredentials", 0, {"users": [{"name": "nx-{u}"}]}),
    ("describe-cluster", "DescribeCluster", 1, {"include_cluster_authorized_operations": False,
                                                "endpoint_type": 1}),
    ("describe-producers", "DescribeProducers", 0, {"topics": [{"name": T, "partition_indexes": [0]}]}),
    ("describe-transactions", "DescribeTransactions", 0, {"transactional_ids": ["tx-{u}"]}),
    ("list-transactions", "ListTransactions", 2, {"state_filters": [], "producer_id_filters": [],
                                                  "duration_filter": -1, "transactional_id_pattern": "tx-authz.*"}),
    ("consumer-group-heartbeat", "ConsumerGroupHeartbeat", 1, {
        "group_id": "g-{u}", "member_id": "m-{u}", "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000, "subscribed_topic_names": [T], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": []}),
    ("consumer-group-describe", "ConsumerGroupDescribe", 1, {"group_ids": ["g-{u}"],
                                                             "include_authorized_operations": False}),
    ("describe-quorum", "DescribeQuorum", 2, {"topics": [{"topic_name": "__cluster_metadata",
                                                          "partitions": [{"partition_index": 0}]}]}),
    ("update-features", "UpdateFeatures", 2, {"timeout_ms": 60000, "validate_only": True, "feature_updates": [
        {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1}]}),
    ("list-config-resources", "ListConfigResources", 1, {"resource_types": [4, 8]}),
    ("describe-topic-partitions", "DescribeTopicPartitions", 0, {
        "topics": [{"name": T}, {"name": "nx-{u}"}], "response_partition_limit": 1, "cursor": None}),
    ("find-share-coordinator", "FindCoordinator", 6, {"key_type": 2,
                                                      "coordinator_keys": ["sg-{u}:b9Wo0gpLTX6cL4saLT5PUA:0"]}),
    ("initialize-share-group-state", "InitializeShareGroupState", 0, {"group_id": "sg-{u}", "topics": [
        {"topic_id": NO_TOPIC, "partitions": [{"partition": 0, "state_epoch": 0, "start_offset": 0}]}]}),
    ("read-share-group-state", "ReadShareGroupState", 0, {"group_id": "sg-{u}", "topics": [
        {"topic_id": NO_TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]}),
    ("write-share-group-state", "WriteShareGroupState", 1, {"group_id": "sg-{u}", "topics": [
        {"topic_id": NO_TOPIC, "partitions": [{"partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
                                               "delivery_complete_count": -1, "state_batches": []}]}]}),
    ("delete-share-group-state", "DeleteShareGroupState", 0, {"group_id": "sg-{u}", "topics": [
        {"topic_id": NO_TOPIC, "partitions": [{"partition": 0}]}]}),
    ("read-share-group-state-summary", "ReadShareGroupStateSummary", 1, {"group_id": "sg-{u}", "topics": [
        {"topic_id": NO_TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]}),
    # delegation tokens (off on both: no delegation.token.secret.key): who is refused before that
    ("create-delegation-token", "CreateDelegationToken", 3, {
        "owner_principal_type": None, "owner_principal_name": None, "renewers": [], "max_lifetime_ms": -1}),
    ("create-delegation-token-for-alice", "CreateDelegationToken", 3, {
        "owner_principal_type": "User", "owner_principal_name": "alice", "renewers": [], "max_lifetime_ms": -1}),
    ("create-delegation-token-group-renewer", "CreateDelegationToken", 3, {
        "owner_principal_type": None, "owner_principal_name": None,
        "renewers": [{"principal_type": "Group", "principal_name": "g"}], "max_lifetime_ms": -1}),
    ("renew-delegation-token", "RenewDelegationToken", 2, {"hmac": b"nope", "renew_period_ms": 1000}),
    ("expire-delegation-token", "ExpireDelegationToken", 2, {"hmac": b"nope", "expiry_time_period_ms": -1}),
    ("describe-delegation-token", "DescribeDelegationToken", 3, {"owners": None}),
    ("write-txn-markers", "WriteTxnMarkers", 1, {"markers": [
        {"producer_id": 4242, "producer_epoch": 0, "transaction_result": False, "coordinator_epoch": 0,
         "topics": [{"name": "nx-{u}", "partition_indexes": [0]}]}]}),
]

PRINCIPALS = ["nobody", *ACL_PRINCIPALS]

# listings show every group of the run: their states depend on other scenarios' timing
IGNORE = {"list-groups": ["group_state"],
          # open: Kafka reported 0 bytes for `dt` in one run (README, Compatibility)
          "describe-log-dirs": ["partition_size"],
          # pylog keeps no metadata log: its offsets and the voter's clocks are its own
          "describe-quorum": ["high_watermark", "log_end_offset", "last_fetch_timestamp",
                              "last_caught_up_timestamp", "nodes"]}

SCENARIOS = [
    {"name": f"authz {label} as {who}",
     "steps": [{"api": api, "v": v, "as": who, "body": body, "ignore": IGNORE.get(label, [])}]}
    for label, api, v, body in REQUESTS for who in PRINCIPALS
]
