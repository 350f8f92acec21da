"""The broker's one request-handler table: every API it serves, in one place.

Each entry pairs an API's protocol schema (key, name and the version range,
declared once in pylog.core.protocol.apis) with the module-level function that
answers it and the function that builds its whole-request error answer. The
broker advertises exactly these APIs at exactly the schema's versions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pylog.commands.broker.api import (
    admin as apis_admin,
    configs as apis_configs,
    consumer_groups as apis_consumer_groups,
    fetch as apis_fetch,
    groups as apis_groups,
    meta as apis_meta,
    produce as apis_produce,
    quotas as apis_quotas,
    reassign as apis_reassign,
    security as apis_security,
    share as apis_share,
    share_admin as apis_share_admin,
    txn as apis_txn,
)
from pylog.commands.broker.net import sasl
from pylog.commands.broker.api.context import ErrorBuilder, Response
from pylog.core.protocol import Api
from pylog.core.protocol.apis import (
    configs, consumer_groups, fetch, groups, meta, produce, quotas, reassign, security, share_groups, topics,
    txn,
)


@dataclass(frozen=True)
class Handler:
    """One served API: its schema, `handle(broker, ctx, body)` and `error(body, version, code, msg)`."""

    schema: Api
    handle: Callable[..., Response]
    error: ErrorBuilder
    # ApiVersions may list an older floor than is served: Kafka 4 lists Produce from v0 and
    # serves v3+ (KAFKA-18659; librdkafka before 2.10 compresses only when v0 is listed)
    advertised_min_version: int | None = None

    @property
    def advertised_min(self) -> int:
        """The min version ApiVersions lists."""
        v = self.advertised_min_version
        return self.schema.min_version if v is None else v

    @property
    def key(self) -> int:
        """The api key (from the schema)."""
        return self.schema.key


HANDLERS: tuple[Handler, ...] = (
    # what clients ask first
    Handler(meta.API_VERSIONS, apis_meta.api_versions, apis_meta.api_versions_error),
    Handler(meta.METADATA, apis_meta.metadata, apis_meta.metadata_error),
    Handler(meta.DESCRIBE_CLUSTER, apis_meta.describe_cluster, apis_meta.describe_cluster_error),
    # authentication (before anything else on SASL listeners)
    Handler(meta.SASL_HANDSHAKE, sasl.sasl_handshake, sasl.sasl_handshake_error),
    Handler(security.SASL_AUTHENTICATE, sasl.sasl_authenticate, sasl.sasl_authenticate_error),
    # producing
    Handler(produce.PRODUCE, apis_produce.produce, apis_produce.produce_error, advertised_min_version=0),
    Handler(produce.INIT_PRODUCER_ID, apis_produce.init_producer_id, apis_produce.init_producer_id_error),
    # fetching and offsets
    Handler(fetch.FETCH, apis_fetch.fetch, apis_fetch.fetch_error),
    Handler(fetch.LIST_OFFSETS, apis_fetch.list_offsets, apis_fetch.list_offsets_error),
    Handler(fetch.OFFSET_FOR_LEADER_EPOCH, apis_fetch.offset_for_leader_epoch,
            apis_fetch.offset_for_leader_epoch_error),
    # topic administration
    Handler(topics.CREATE_TOPICS, apis_admin.create_topics, apis_admin.create_topics_error),
    Handler(topics.DELETE_TOPICS, apis_admin.delete_topics, apis_admin.delete_topics_error),
    Handler(topics.CREATE_PARTITIONS, apis_admin.create_partitions, apis_admin.create_partitions_error),
    Handler(topics.DELETE_RECORDS, apis_admin.delete_records, apis_admin.delete_records_error),
    Handler(configs.DESCRIBE_LOG_DIRS, apis_admin.describe_log_dirs, apis_admin.describe_log_dirs_error),
    # partition placement (one node: nothing to elect or move)
    Handler(reassign.ELECT_LEADERS, apis_reassign.elect_leaders, apis_reassign.elect_leaders_error),
    Handler(reassign.ALTER_PARTITION_REASSIGNMENTS, apis_reassign.alter_partition_reassignments,
            apis_reassign.alter_partition_reassignments_error),
    Handler(reassign.LIST_PARTITION_REASSIGNMENTS, apis_reassign.list_partition_reassignments,
            apis_reassign.list_partition_reassignments_error),
    # configs
    Handler(configs.DESCRIBE_CONFIGS, apis_configs.describe_configs, apis_configs.describe_configs_error),
    Handler(configs.ALTER_CONFIGS, apis_configs.alter_configs, apis_configs.alter_error),
    Handler(configs.INCREMENTAL_ALTER_CONFIGS, apis_configs.incremental_alter_configs, apis_configs.alter_error),
    # consumer groups (the group coordinator)
    Handler(groups.FIND_COORDINATOR, apis_groups.find_coordinator, apis_groups.find_coordinator_error),
    Handler(groups.JOIN_GROUP, apis_groups.join_group, apis_groups.join_group_error),
    Handler(groups.SYNC_GROUP, apis_groups.sync_group, apis_groups.sync_group_error),
    Handler(groups.HEARTBEAT, apis_groups.heartbeat, apis_groups.heartbeat_error),
    Handler(groups.LEAVE_GROUP, apis_groups.leave_group, apis_groups.leave_group_error),
    Handler(groups.OFFSET_COMMIT, apis_groups.offset_commit, apis_groups.offset_commit_error),
    Handler(groups.OFFSET_FETCH, apis_groups.offset_fetch, apis_groups.offset_fetch_error),
    Handler(groups.OFFSET_DELETE, apis_groups.offset_delete, apis_groups.offset_delete_error),
    Handler(groups.LIST_GROUPS, apis_groups.list_groups, apis_groups.list_groups_error),
    Handler(groups.DESCRIBE_GROUPS, apis_groups.describe_groups, apis_groups.describe_groups_error),
    Handler(groups.DELETE_GROUPS, apis_groups.delete_groups, apis_groups.delete_groups_error),
    # KIP-848 consumer groups
    Handler(consumer_groups.CONSUMER_GROUP_HEARTBEAT, apis_consumer_groups.consumer_group_heartbeat,
            apis_consumer_groups.consumer_group_heartbeat_error),
    Handler(consumer_groups.CONSUMER_GROUP_DESCRIBE, apis_consumer_groups.consumer_group_describe,
            apis_consumer_groups.consumer_group_describe_error),
    # share groups (KIP-932)
    Handler(share_groups.SHARE_GROUP_HEARTBEAT, apis_share.share_group_heartbeat,
            apis_share.share_group_heartbeat_error),
    Handler(share_groups.SHARE_GROUP_DESCRIBE, apis_share.share_group_describe, apis_share.share_group_describe_error),
    Handler(share_groups.SHARE_FETCH, apis_share.share_fetch, apis_share.share_fetch_error),
    Handler(share_groups.SHARE_ACKNOWLEDGE, apis_share.share_acknowledge, apis_share.share_acknowledge_error),
    Handler(share_groups.DESCRIBE_SHARE_GROUP_OFFSETS, apis_share_admin.describe_share_group_offsets,
            apis_share_admin.describe_share_group_offsets_error),
    Handler(share_groups.ALTER_SHARE_GROUP_OFFSETS, apis_share_admin.alter_share_group_offsets,
            apis_share_admin.alter_share_group_offsets_error),
    Handler(share_groups.DELETE_SHARE_GROUP_OFFSETS, apis_share_admin.delete_share_group_offsets,
            apis_share_admin.delete_share_group_offsets_error),
    # transactions (the transaction coordinator)
    Handler(txn.ADD_PARTITIONS_TO_TXN, apis_txn.add_partitions_to_txn, apis_txn.add_partitions_to_txn_error),
    Handler(txn.ADD_OFFSETS_TO_TXN, apis_txn.add_offsets_to_txn, apis_txn.add_offsets_to_txn_error),
    Handler(txn.END_TXN, apis_txn.end_txn, apis_txn.end_txn_error),
    Handler(txn.WRITE_TXN_MARKERS, apis_txn.write_txn_markers, apis_txn.write_txn_markers_error),
    Handler(txn.TXN_OFFSET_COMMIT, apis_txn.txn_offset_commit, apis_txn.txn_offset_commit_error),
    Handler(txn.DESCRIBE_PRODUCERS, apis_txn.describe_producers, apis_txn.describe_producers_error),
    Handler(txn.DESCRIBE_TRANSACTIONS, apis_txn.describe_transactions, apis_txn.describe_transactions_error),
    Handler(txn.LIST_TRANSACTIONS, apis_txn.list_transactions, apis_txn.list_transactions_error),
    # ACLs and SCRAM credentials
    Handler(security.DESCRIBE_ACLS, apis_security.describe_acls, apis_security.describe_acls_error),
    Handler(security.CREATE_ACLS, apis_security.create_acls, apis_security.create_acls_error),
    Handler(security.DELETE_ACLS, apis_security.delete_acls, apis_security.delete_acls_error),
    Handler(security.DESCRIBE_USER_SCRAM_CREDENTIALS, apis_security.describe_scram,
            apis_security.describe_scram_error),
    Handler(security.ALTER_USER_SCRAM_CREDENTIALS, apis_security.alter_scram, apis_security.alter_scram_error),
    # client quotas
    Handler(quotas.DESCRIBE_CLIENT_QUOTAS, apis_quotas.describe_client_quotas,
            apis_quotas.describe_client_quotas_error),
    Handler(quotas.ALTER_CLIENT_QUOTAS, apis_quotas.alter_client_quotas, apis_quotas.alter_client_quotas_error),
)
