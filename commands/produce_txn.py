"""`pylog produce --transactional-id ID [--transaction-size N]`: the input in transactions.

Records go in transactions of N records (the whole input when N is not given);
a record counts as delivered only once its transaction committed. A transaction
that cannot commit (an abortable error) is aborted, its records are reported
failed and the next transaction starts; a fenced or otherwise fatal producer
stops the command.
"""
from __future__ import annotations

import click

from pylog.commands.produce_input import Block


def transaction_options(f):
    """--transactional-id and --transaction-size (produce only)."""
    f = click.option("--transaction-size", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Commit a transaction every N records (with --transactional-id; "
                          "default: the whole input is one transaction).")(f)
    f = click.option("--transactional-id", default=None, metavar="ID",
                     help="Produce in transactions with this transactional.id; records are delivered "
                          "(visible to read_committed consumers) when their transaction commits.")(f)
    return f


class Transactions:
    """Drives one transactional producer through the produce command's blocks."""

    def __init__(self, producer, size: int | None, tracker):
        self.producer = producer
        self.size = size
        self.tracker = tracker
        self.open = 0  # records in the open transaction
        self.in_txn = False
        self.committed = 0
        self.aborted = 0
        tracker.hold = True  # a record is delivered when its transaction commits, not when acknowledged
        producer.init_transactions()

    def pieces(self, block: Block, first: int):
        """The block cut where transactions end: (sub-block, its first line number) pairs, each
        followed by `sent()`."""
        n = len(block.values)
        start = 0
        while start < n:
            if not self.in_txn:
                self.producer.begin_transaction()
                self.in_txn = True
            stop = n if self.size is None else min(n, start + self.size - self.open)
            yield _slice(block, start, stop), first + start
            self.open += stop - start
            if self.size is not None and self.open >= self.size:
                self.end()
            start = stop

    def end(self):
        """Commit the open transaction (abort it and count its records failed if it cannot)."""
        from pylog.core.client.transactions import AbortableTransactionError

        if not self.in_txn:
            return
        self.open = 0
        self.in_txn = False
        try:
            self.producer.commit_transaction()
        except AbortableTransactionError as e:
            self.producer.abort_transaction()
            self.aborted += 1
            self.tracker.settle(force=True, failure=f"transaction aborted: {e}")
            return
        self.committed += 1
        self.tracker.settle(force=True)


def _slice(block: Block, a: int, b: int) -> Block:
    if a == 0 and b == len(block.values):
        return block
    def cut(col):
        return None if col is None else col[a:b]
    return Block(block.values[a:b], cut(block.keys), cut(block.headers), cut(block.partitions),
                 cut(block.timestamps), cut(block.lines))
