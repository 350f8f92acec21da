"""The append's validating walk in C (`validate_batches`, one call per append) and its offset
and epoch patch (`patch_append_fields`) against their pure-Python references
(`log_validator.validate_batches_py`, `header.patch_append_fields_py`): for the same buffers
(one to three batches with any header fields, codecs, record sections, damaged ones included)
and the same limits, the same answer (the batches as BatchHeaders, count, max timestamp,
producer id flag, or None), the same calls of the compressed-batch check, the same patched
bytes. Beside it, in whichever implementation is active, what `validate_fast` accepts
`validate` accepts with the same result, and what `validate` refuses `validate_fast` hands
over (None).

The compiled extension is optional; where it was not built the C-against-Python test skips
saying so, except in CI (CI=true), where its absence is a failure.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.mutations import damage
from support.native import native, needs_native
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import batch, compression, header
from pylog.core.records.header import BatchHeader, iter_headers, pack_batch
from pylog.storage import log_validator

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOW = 1_700_000_000_000
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1

record = st.tuples(
    st.sampled_from([0, 0, 0, 1, -5, 1 << 40]),  # timestamp delta
    st.one_of(st.none(), st.binary(max_size=8)),  # key
    st.one_of(st.none(), st.binary(max_size=60)),  # value
    st.lists(st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=4))), max_size=2),
)


@st.composite
def one_batch(draw):
    """A batch: the records' framing and the header's fields drawn, mostly consistent, sometimes not."""
    recs = draw(st.lists(record, min_size=1, max_size=8))
    section = b"".join(batch.encode_record_py(i, tsd, k, v, h) for i, (tsd, k, v, h) in enumerate(recs))
    if draw(st.integers(0, 5)) == 0:
        section = bytes(damage(draw, bytearray(section), 2, ["flip", "cut", "insert", "delete", "set"],
                               [0x00, 0x01, 0x7F, 0x80, 0xFF], 3, 4))
    codec = draw(st.sampled_from([0, 0, 0, 1, 3, 4, 5]))
    payload = compression.compress(codec, section) if 0 < codec <= 4 else section
    if codec and draw(st.integers(0, 6)) == 0:
        payload = payload[: len(payload) // 2]  # does not decompress
    n = len(recs) + draw(st.sampled_from([0, 0, 0, 0, 1, -1]))
    attributes = codec | draw(st.sampled_from([0, 0, 0, 0x08, 0x10, 0x20, 0x18]))
    pid = draw(st.sampled_from([-1, -1, 7]))
    base_ts = NOW + draw(st.sampled_from([0, 0, -10 ** 9, 10 ** 9]))
    max_ts = draw(st.sampled_from([base_ts, base_ts + 1, -1, NOW - 10 ** 10, LONG_MAX]))
    return pack_batch(payload, attributes=attributes, last_offset_delta=n - 1 + draw(st.sampled_from([0, 0, 0, 1])),
                      base_timestamp=base_ts, max_timestamp=max_ts, record_count=n, producer_id=pid,
                      producer_epoch=0 if pid >= 0 else -1,
                      base_sequence=draw(st.sampled_from([0, 5, -1])) if pid >= 0 else -1)


@st.composite
def buffers(draw):
    buf = bytearray(b"".join(draw(st.lists(one_batch(), min_size=1, max_size=3))))
    if draw(st.integers(0, 4)) == 0:  # damage past the CRC's reach: header fields, lengths, the cut
        buf = damage(draw, buf, 2, ["flip", "cut", "set", "delete"], [0x00, 0x02, 0x7F, 0x80, 0xFF], 3, 4)
    return buf


windows = st.tuples(
    st.booleans(),  # CreateTime
    st.sampled_from([LONG_MIN, LONG_MIN, NOW - 10 ** 9]),  # lo
    st.sampled_from([LONG_MAX, NOW + 10 ** 9, NOW]),  # hi
    st.sampled_from([1 << 20, 1 << 20, 120, 61]),  # max.message.bytes
)


def outcome(fn, buf, window, verdicts):
    create_time, lo, hi, max_message = window
    calls = []

    def check(mv, pos, h, tp):
        calls.append((pos, tuple(h), type(h).__name__, tp))
        return verdicts[len(calls) % len(verdicts)] and log_validator.compressed_records_ok(mv, pos, h, tp)
    try:
        r = fn(memoryview(buf), max_message, create_time, lo, hi, check, "t-0")
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever was raised
        return ("error", type(e).__name__, str(e), calls)
    if r is not None:
        batches, count, max_ts, has_pid = r
        assert all(type(h) is BatchHeader for _, h in batches)
        r = ([(p, tuple(h)) for p, h in batches], count, max_ts, has_pid)
    return ("ok", r, calls)


@needs_native
@SETTINGS
@given(buffers(), windows, st.lists(st.booleans(), min_size=1, max_size=3))
def test_validate_batches_agrees(buf, window, verdicts):
    py = outcome(log_validator.validate_batches_py, bytes(buf), window, verdicts)
    assert py == outcome(native.validate_batches, bytes(buf), window, verdicts)
    assert py == outcome(native.validate_batches, bytearray(buf), window, verdicts)


@needs_native
def test_a_large_batch_and_the_chosen_implementation():
    """A batch long enough for the three-lane CRC and the walk without the GIL, and one bit off."""
    buf = bytearray(batch.build_batch([(NOW, None, b"x" * 100) for _ in range(12000)]))
    window = (True, LONG_MIN, LONG_MAX, 2 << 20)
    good = outcome(native.validate_batches, buf, window, [True])
    assert good == outcome(log_validator.validate_batches_py, buf, window, [True])
    assert good[1][1] == 12000
    buf[len(buf) // 2] ^= 4
    assert outcome(native.validate_batches, buf, window, [True]) == ("ok", None, [])
    assert log_validator.validate_batches is native.validate_batches


@SETTINGS
@given(buffers(), st.sampled_from(["CreateTime", "LogAppendTime"]), st.sampled_from(["delete", "compact"]),
       st.sampled_from([LONG_MAX, 10 ** 9]), st.sampled_from([LONG_MAX, 10 ** 9]), st.sampled_from([1 << 20, 120]))
def test_validate_fast_accepts_what_validate_accepts(buf, ts_type, policy, before, after, max_message):
    cfg = TOPIC_CONFIGS.resolve({"message.timestamp.type": ts_type, "cleanup.policy": policy,
                                 "message.timestamp.before.max.ms": str(before),
                                 "message.timestamp.after.max.ms": str(after),
                                 "max.message.bytes": str(max_message)})
    mv = memoryview(bytes(buf))
    fast = log_validator.validate_fast(mv, len(mv), NOW, cfg, "t-0")
    try:
        full = log_validator.validate(mv, len(mv), NOW, cfg, "t-0")
    except Exception:  # noqa: BLE001 - any refusal: the fast walk must have handed over
        assert fast is None
        return
    if fast is not None:
        assert type(fast) is log_validator.Validated
        assert fast == full


@needs_native
@SETTINGS
@given(st.lists(one_batch(), min_size=1, max_size=3), st.integers(0, 1 << 62), st.integers(-1, (1 << 31) - 1))
def test_patch_append_fields_agrees(batches, base_offset, epoch):
    """The leader's offset and epoch patch: the same bytes and the same headers as written."""
    buf = b"".join(batches)
    found = list(iter_headers(buf, 0, len(buf), verify_crc=False))
    py_buf, c_buf = bytearray(buf), bytearray(buf)
    py = header.patch_append_fields_py(py_buf, found, base_offset, epoch)
    c = native.patch_append_fields(c_buf, found, base_offset, epoch)
    assert py_buf == c_buf
    assert [(p, type(h), tuple(h)) for p, h in py[0]] == [(p, type(h), tuple(h)) for p, h in c[0]]
    assert py[1] == c[1]
    assert [h for _, h in c[0]] == [h for _, h in iter_headers(c_buf, 0, len(c_buf), verify_crc=False)]
    for bad in ([(len(buf) - 8, found[0][1])], [(0, tuple(found[0][1])[:5])]):
        with pytest.raises((ValueError, TypeError)):
            native.patch_append_fields(bytearray(buf), bad, base_offset, epoch)
    assert header.patch_append_fields is native.patch_append_fields
