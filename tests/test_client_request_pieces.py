"""The producer's batches go to the socket from their own buffers (no broker needed).

A batch's header is written into the room reserved at the front of its buffer: the
same bytes as pack_batch of its records. A request is encoded as pieces around its
record sets (encode_request_parts): joined, the pieces are encode_request's bytes
for the same body. BrokerConnection writes the pieces with one gathering write and
queues what the socket did not take: the peer reads the whole frame.
"""
from __future__ import annotations

import asyncio
import gc
import os
import random
import socket

import pytest

from pylog.core.client.accumulator import ProducerBatch
from pylog.core.client.connection import BrokerConnection
from pylog.core.client.errors import KafkaTimeoutError
from pylog.core.protocol import (
    API_KEYS, SCHEMAS, RecordsPiece, decode_request, encode_request, encode_request_parts,
)
from pylog.core.records.header import HEADER_SIZE, iter_headers, pack_batch

PRODUCE = API_KEYS["Produce"]
VERSIONS = range(3, SCHEMAS[PRODUCE].max_version + 1)


def _batch(rnd, count, codec=0):
    b = ProducerBatch("t", 0, 1 << 20, codec, 0.0, 0)
    for i in range(count):
        value = rnd.randbytes(rnd.randint(0, 300)) if rnd.random() < 0.9 else None
        key = None if rnd.random() < 0.5 else b"k%d" % i
        assert b.try_append(1_700_000_000_000 + i, key, value, None) == i
    return b


def _body(tid, batches_by_topic):
    return {
        "transactional_id": tid, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": t, "partition_data": [{"index": i, "records": r} for i, r in enumerate(rs)]}
                       for t, rs in batches_by_topic.items()],
    }


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", range(4))
def test_pieces_join_to_the_plain_request(version, seed):
    rnd = random.Random(seed * 100 + version)
    topics = {f"topic-{t}": [_batch(rnd, rnd.randint(1, 50)).build() for _ in range(rnd.randint(1, 3))]
              for t in range(rnd.randint(1, 3))}
    if seed == 3:
        topics["empty"] = [b""]  # an empty record set writes its length only
    tid = None if seed % 2 else "txn-é"
    client_id = None if seed == 2 else "pylog"
    plain = encode_request(PRODUCE, version, 7 + seed, client_id, _body(tid, topics))
    wrapped = {t: [RecordsPiece(r) for r in rs] for t, rs in topics.items()}
    pieces = encode_request_parts(PRODUCE, version, 7 + seed, client_id, _body(tid, wrapped))
    assert b"".join(pieces) == plain
    # each batch is a piece of its own, the very buffer the batch was built in
    batch_ids = {id(r) for rs in topics.values() for r in rs if r}
    assert batch_ids <= {id(p) for p in pieces}
    assert 2 * len(batch_ids) <= len(pieces) <= 2 * len(batch_ids) + 1  # the fields between and after
    got = decode_request(memoryview(plain)[4:])
    assert got.body["transactional_id"] == tid


def test_a_request_without_record_pieces_is_one_piece():
    body = _body(None, {"t": [b""]})
    pieces = encode_request_parts(PRODUCE, 9, 1, "c", body)
    assert len(pieces) == 1 and bytes(pieces[0]) == encode_request(PRODUCE, 9, 1, "c", body)
    meta = encode_request_parts(API_KEYS["Metadata"], 12, 2, "c", {"topics": None})
    assert b"".join(meta) == encode_request(API_KEYS["Metadata"], 12, 2, "c", {"topics": None})


@pytest.mark.parametrize("codec", [0, 1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_a_batch_built_in_place_is_what_pack_batch_builds(codec, seed):
    rnd = random.Random(seed)
    b = _batch(rnd, rnd.randint(1, 200), codec)
    b.producer_id, b.producer_epoch, b.base_sequence = 1000 + seed, 2, 17 * seed
    b.transactional = bool(seed % 2)
    records, before = bytes(b.buf[HEADER_SIZE:]), b.records()
    wire = b.build()
    assert wire is b.build()  # built once, retries reuse it
    if codec == 0:
        assert wire is b.buf
        want = pack_batch(records, attributes=16 * b.transactional, last_offset_delta=b.count - 1,
                          base_timestamp=b.base_ts, max_timestamp=b.max_ts, record_count=b.count,
                          producer_id=b.producer_id, producer_epoch=2, base_sequence=b.base_sequence)
        assert bytes(wire) == want
    ((_, h),) = list(iter_headers(bytes(wire)))  # the CRC is checked
    assert (h.record_count, h.base_sequence, h.producer_id, bool(h.attributes & 16)) == (
        b.count, 17 * seed, 1000 + seed, bool(seed % 2))
    b.set_producer(5, 6, 99)  # a retry under a new epoch patches the built header
    ((_, h),) = list(iter_headers(bytes(b.wire)))
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (5, 6, 99)
    assert b.records() == before  # a batch split after a MESSAGE_TOO_LARGE reads its records


def test_the_pieces_reach_the_peer_whole_when_the_socket_takes_part():
    """Several MB in one gathering write: the socket takes part of it, the rest is queued."""
    rnd = random.Random(5)
    pieces = [bytearray(os.urandom(rnd.randint(1, 1 << 20))) for _ in range(7)] + [b"tail"]
    frames = [bytes(b"".join(pieces)), b"after"]

    async def main():
        got = bytearray()
        done = asyncio.Event()

        async def serve(reader, writer):
            while len(got) < sum(map(len, frames)):
                chunk = await reader.read(1 << 16)
                if not chunk:
                    break
                got.extend(chunk)
                await asyncio.sleep(0)
            done.set()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        conn = BrokerConnection("127.0.0.1", port)
        conn._fd = sock.fileno()
        conn._write_pieces(writer.transport, pieces)
        assert writer.transport.get_write_buffer_size() > 0  # the socket did not take it all
        for p in pieces[:-1]:  # no piece is referenced once written: the caller may reuse them
            p[:] = b"x" * len(p)
        conn._write_pieces(writer.transport, [b"af", bytearray(b"ter")])  # queued behind, in order
        await asyncio.wait_for(done.wait(), 60)
        writer.close()
        server.close()
        return bytes(got)

    assert asyncio.run(main()) == b"".join(frames)


def test_a_timed_out_request_leaves_no_unretrieved_future():
    """The caller of a timed-out request gets the error; the request's own future (which
    no one awaits once its waiter left through asyncio.shield) is not reported at GC as
    "Future exception was never retrieved"."""
    reported = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))

        async def silent(reader, writer):
            await reader.read()  # reads the request, never answers
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = BrokerConnection("127.0.0.1", port)
        conn._reader, conn._writer = await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises(KafkaTimeoutError, match="timed out after 100 ms"):
            await conn.request("Metadata", {"topics": None}, version=12, timeout=0.1)
        await conn.close()
        server.close()
        gc.collect()
        await asyncio.sleep(0)

    asyncio.run(main())
    gc.collect()
    assert not [c for c in reported if "never retrieved" in c.get("message", "")], reported
