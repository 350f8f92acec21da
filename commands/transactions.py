"""`pylog transactions list|describe|describe-producers|abort`: kafka-transactions.sh for pylog."""
from __future__ import annotations

import time

import click

from pylog.commands.client_common import client_props
from pylog.commands.console import emit_json
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import PylogError, UsageError

LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions"]
HANGING_HEADERS = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)"]
PRODUCERS_HEADERS = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset"]


def print_table(headers, rows) -> None:
    """kafka-transactions.sh's table: each column padded to its widest cell, then a tab."""
    cols = [list(map(str, headers))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    for r in cols:  # click.echo: the console would expand the tabs
        click.echo("".join(c.ljust(w) + "\t" for c, w in zip(r, widths)))


def _admin(bootstrap, properties):
    from pylog.core.client.txn_admin import TransactionAdmin

    return TransactionAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


def _fail(what, e) -> PylogError:
    return PylogError(f"{what}: {e}")


@click.group("transactions")
def transactions():
    """List, describe and abort transactions (kafka-transactions.sh).

    Works against any Kafka-protocol broker: `list` asks every broker for the
    transactions it coordinates, `describe` asks the coordinator of one
    transactional id, `describe-producers` shows a partition's producer state
    (with the start offset of an open transaction), `find-hanging` finds open
    transactions no coordinator will finish, and `abort` writes an ABORT marker
    for a hanging transaction on one partition.
    """


@transactions.command("list")
@bootstrap_option
@click.option("--state", "states", multiple=True, metavar="STATE",
              help="Only transactions in this state (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, "
                   "CompleteAbort, Dead, PrepareEpochFence); repeatable.")
@click.option("--producer-id", "producer_ids", type=int, multiple=True, metavar="ID",
              help="Only transactions of this producer id; repeatable.")
@click.option("--duration-ms", type=click.IntRange(min=0), default=None, metavar="MS",
              help="Only transactions open for longer than this.")
@properties_options
@json_option
def list_(bootstrap, states, producer_ids, duration_ms, properties, as_json):
    """List the transactional ids every coordinator knows, with producer id and state."""
    with _admin(bootstrap, properties) as admin:
        try:
            txns = admin.list_transactions(states, producer_ids, -1 if duration_ms is None else duration_ms)
        except PylogError as e:
            raise _fail("Failed to list transactions", e) from None
    if as_json:
        emit_json([{"transactional_id": t.transactional_id, "coordinator": t.coordinator,
                    "producer_id": t.producer_id, "state": t.state} for t in txns])
        return
    print_table(LIST_HEADERS, [(t.transactional_id, t.coordinator, t.producer_id, t.state) for t in txns])


@transactions.command("describe")
@bootstrap_option
@click.option("--transactional-id", required=True, metavar="ID", help="The transactional id to describe.")
@properties_options
@json_option
def describe(bootstrap, transactional_id, properties, as_json):
    """Describe the state of a transactional id on its coordinator."""
    with _admin(bootstrap, properties) as admin:
        try:
            d = admin.describe_transaction(transactional_id)
        except PylogError as e:
            raise _fail(f"Failed to describe transaction state of transactional-id `{transactional_id}`", e) \
                from None
    now = int(time.time() * 1000)
    started = d.start_time_ms if d.start_time_ms >= 0 else None
    if as_json:
        emit_json({"coordinator": d.coordinator, "transactional_id": d.transactional_id,
                   "producer_id": d.producer_id, "producer_epoch": d.producer_epoch, "state": d.state,
                   "transaction_timeout_ms": d.timeout_ms, "transaction_start_time_ms": started,
                   "transaction_duration_ms": None if started is None else now - started,
                   "topic_partitions": d.partitions})
        return
    print_table(DESCRIBE_HEADERS, [(d.coordinator, d.transactional_id, d.producer_id, d.producer_epoch, d.state,
                                    d.timeout_ms, "None" if started is None else started,
                                    "None" if started is None else now - started, ",".join(d.partitions))])


@transactions.command("describe-producers")
@bootstrap_option
@click.option("--topic", required=True, help="Topic name.")
@click.option("--partition", required=True, type=click.IntRange(min=0), help="Partition number.")
@click.option("--broker-id", type=int, default=None, help="Ask this replica instead of the leader.")
@properties_options
@json_option
def describe_producers(bootstrap, topic, partition, broker_id, properties, as_json):
    """The active producers of a partition: epoch, last sequence, open transaction's start offset."""
    with _admin(bootstrap, properties) as admin:
        try:
            states = admin.describe_producers(topic, partition, broker_id)
        except PylogError as e:
            where = f"broker {broker_id}" if broker_id is not None else "leader"
            raise _fail(f"Failed to describe producers for partition {topic}-{partition} on {where}", e) from None
    if as_json:
        emit_json([{"producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
                    "coordinator_epoch": s.coordinator_epoch, "last_sequence": s.last_sequence,
                    "last_timestamp": s.last_timestamp,
                    "current_transaction_start_offset": None if s.current_txn_start_offset < 0
                    else s.current_txn_start_offset} for s in states])
        return
    print_table(PRODUCERS_HEADERS, [(s.producer_id, s.producer_epoch, s.coordinator_epoch, s.last_sequence,
                                     s.last_timestamp, s.current_txn_start_offset
                                     if s.current_txn_start_offset >= 0 else "None") for s in states])


@transactions.command("abort")
@bootstrap_option
@click.option("--topic", required=True, help="Topic name.")
@click.option("--partition", required=True, type=click.IntRange(min=0), help="Partition number.")
@click.option("--start-offset", type=click.IntRange(min=0), default=None,
              help="Start offset of the transaction to abort (its producer is found with DescribeProducers).")
@click.option("--producer-id", type=int, default=None, help="Producer id (instead of --start-offset).")
@click.option("--producer-epoch", type=int, default=None, help="Producer epoch (with --producer-id).")
@click.option("--coordinator-epoch", type=int, default=None, help="Coordinator epoch (with --producer-id).")
@properties_options
@json_option
def abort(bootstrap, topic, partition, start_offset, producer_id, producer_epoch, coordinator_epoch, properties,
          as_json):
    """Abort a hanging transaction on one partition (writes an ABORT marker; needs administrative rights).

    The transaction is named by --start-offset (the producer is looked up with
    DescribeProducers), or by --producer-id, --producer-epoch and
    --coordinator-epoch.
    """
    if start_offset is None and producer_id is None:
        raise UsageError("The transaction to abort must be identified either with --start-offset or with "
                         "--producer-id, --producer-epoch, and --coordinator-epoch")
    if start_offset is None:
        if producer_epoch is None:
            raise UsageError("Missing required argument --producer-epoch")
        if coordinator_epoch is None:
            raise UsageError("Missing required argument --coordinator-epoch")
    with _admin(bootstrap, properties) as admin:
        tp = f"{topic}-{partition}"
        if start_offset is not None:
            try:
                states = admin.describe_producers(topic, partition)
            except PylogError as e:
                raise _fail(f"Failed to validate producer state for partition {tp}", e) from None
            found = [s for s in states if s.current_txn_start_offset == start_offset]
            if not found:
                raise PylogError(f"Could not find any open transactions starting at offset {start_offset} "
                                 f"on partition {tp}")
            s = found[0]
            producer_id, producer_epoch, coordinator_epoch = s.producer_id, s.producer_epoch, s.coordinator_epoch
        spec = (f"AbortTransactionSpec(topicPartition={tp}, producerId={producer_id}, "
                f"producerEpoch={producer_epoch}, coordinatorEpoch={max(0, coordinator_epoch)})")
        try:
            admin.abort_transaction(topic, partition, producer_id, producer_epoch, coordinator_epoch)
        except PylogError as e:
            raise _fail(f"Failed to abort transaction {spec}", e) from None
    if as_json:
        emit_json({"topic": topic, "partition": partition, "producer_id": producer_id,
                   "producer_epoch": producer_epoch, "coordinator_epoch": max(0, coordinator_epoch),
                   "aborted": True})


@transactions.command("find-hanging")
@bootstrap_option
@click.option("--broker-id", type=int, default=None,
              help="Search every partition with a replica on this broker (asked directly).")
@click.option("--topic", default=None, help="Search only this topic's partitions.")
@click.option("--partition", type=click.IntRange(min=0), default=None, help="Only this partition (with --topic).")
@click.option("--max-transaction-timeout", type=click.IntRange(min=0), default=15, show_default=True,
              metavar="MINUTES",
              help="The largest transaction.timeout.ms in use, in minutes: only producers silent for longer are "
                   "candidates.")
@properties_options
@json_option
def find_hanging(bootstrap, broker_id, topic, partition, max_transaction_timeout, properties, as_json):
    """Find hanging transactions: open on a partition, silent for longer than
    --max-transaction-timeout, and not part of any transaction a coordinator
    is still going to finish. Each row can be ended with `pylog transactions
    abort --topic T --partition P --start-offset O`.
    """
    if topic is None and broker_id is None:
        raise UsageError("The `find-hanging` command requires either --topic or --broker-id to limit the scope "
                         "of the search")
    if partition is not None and topic is None:
        raise UsageError("The --partition argument requires --topic to be provided")
    with _admin(bootstrap, properties) as admin:
        try:
            found = admin.find_hanging(topic, partition, broker_id, max_transaction_timeout * 60_000)
        except PylogError as e:
            raise _fail("Failed to find hanging transactions", e) from None
    now = int(time.time() * 1000)
    rows = [(h.topic, h.partition, h.producer.producer_id, h.producer.producer_epoch, h.producer.coordinator_epoch,
             h.producer.current_txn_start_offset, h.producer.last_timestamp,
             (now - h.producer.last_timestamp) // 60_000) for h in found]
    if as_json:
        emit_json([dict(zip(("topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch",
                             "start_offset", "last_timestamp", "duration_minutes"), r)) for r in rows])
        return
    print_table(HANGING_HEADERS, rows)
