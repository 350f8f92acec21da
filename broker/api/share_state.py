"""The share-group state APIs (KIP-932) as Kafka 4.4's share coordinator serves them.

A share-partition leader keeps its state with the share coordinator through these:
InitializeShareGroupState (a state epoch and start offset, nothing in flight; a lower state epoch
than the recorded one is FENCED_STATE_EPOCH), ReadShareGroupState, WriteShareGroupState (the
batches merged over the recorded ones, those below the start offset dropped; an older leader or
state epoch is fenced), DeleteShareGroupState and ReadShareGroupStateSummary. In pylog the share
coordinator and the share-partition leader are one: these read and change the same share-partitions
(groups/share/coordinator.py) and every change is written to `__share_group_state` before the
answer, as the leader's own changes are. Reading or writing a share-partition nobody initialized
is INVALID_REQUEST, as in Kafka 4.4.

Kept beside the share-partitions, in memory: the leader epoch and delivery-complete count the last
write named (the summary answers them; pylog's records carry leader epoch 0). A read moves the
recorded leader epoch to its own once a write recorded one, as Kafka 4.4's coordinator does.
"""
from __future__ import annotations

import weakref

from pylog.broker.api.context import NONE, RequestContext
from pylog.broker.api.views import ShareView
from pylog.core.errors import ERROR_DESCRIPTIONS, ErrorCode

INVALID = ErrorCode.INVALID_REQUEST
NEGATIVE_PARTITION = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
# {share coordinator: {(group, topic id, partition): [leader epoch, delivery complete count]}}
_WRITTEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _written(broker: ShareView) -> dict:
    return _WRITTEN.setdefault(broker.share_coordinator, {})


def _partition_exists(broker: ShareView, topic_id, p: int) -> bool:
    info = broker.topic_by_id(topic_id)
    return info is not None and 0 <= p < info.num_partitions


def _error(code: int, msg: str | None = None) -> tuple[int, str]:
    return code, msg if msg is not None else ERROR_DESCRIPTIONS[code]


def _each(body: dict, answer) -> dict:
    """One result per requested partition, grouped by topic as asked: `answer(topic id, partition)`."""
    return {"results": [{"topic_id": t["topic_id"], "partitions": [answer(t["topic_id"], p) for p in t["partitions"]]}
                        for t in body["topics"]]}


def _entry(p: int, code: int = NONE, msg: str | None = None, **fields) -> dict:
    return {"partition": p, "error_code": code, "error_message": msg, **fields}


# ---- InitializeShareGroupState -----------------------------------------------------

def initialize_share_group_state(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """A state epoch and start offset for each share-partition, nothing in flight."""
    sc, gid, changed = broker.share_coordinator, body["group_id"], []

    def answer(tid, part):
        p, epoch = part["partition"], part["state_epoch"]
        why = None
        if p < 0:
            why = _error(INVALID, NEGATIVE_PARTITION)
        elif epoch < 0:
            why = _error(INVALID, NEGATIVE_STATE_EPOCH)
        elif not _partition_exists(broker, tid, p):
            why = _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        elif (sp := sc.partition(gid, tid, p, create=False)) is not None and sp.state_epoch > epoch:
            why = _error(ErrorCode.FENCED_STATE_EPOCH)
        if why is not None:
            return _entry(p, *why)
        sp = sc.initialize_partition(gid, tid, p, part["start_offset"])
        sp.state_epoch = epoch
        _written(broker)[(gid, tid, p)] = [None, 0]  # no leader epoch recorded until a write
        changed.append(sp)
        return _entry(p)

    out = _each(body, answer)
    sc.persist(changed)
    return out


def initialize_share_group_state_error(body, version, code, msg):
    return _each(body, lambda tid, part: _entry(part["partition"], code, msg))


# ---- ReadShareGroupState -------------------------------------------------------------

def _read_refusal(sc, gid: str, tid, part: dict, what: str):
    p = part["partition"]
    if p < 0:
        return _error(INVALID, NEGATIVE_PARTITION)
    if part["leader_epoch"] < 0:
        return _error(INVALID, NEGATIVE_LEADER_EPOCH)
    if sc.partition(gid, tid, p, create=False) is None:
        return _error(INVALID, f"{what} operation on uninitialized share partition not allowed.")
    return None


def read_share_group_state(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """The start offset, state epoch and in-flight batches of each share-partition."""
    sc, gid = broker.share_coordinator, body["group_id"]

    def answer(tid, part):
        why = _read_refusal(sc, gid, tid, part, "Read")
        if why is not None:
            return _entry(part["partition"], *why, state_epoch=0, start_offset=0, state_batches=[])
        key = (gid, tid, part["partition"])
        sp = sc.partition(gid, tid, part["partition"], create=False)
        recorded = _written(broker).get(key)
        if recorded is not None and recorded[0] is not None:
            recorded[0] = part["leader_epoch"]  # the reading leader's epoch from now on (Kafka 4.4)
        return _entry(part["partition"], state_epoch=sp.state_epoch, start_offset=sp.start,
                      state_batches=sp.state_batches())

    return _each(body, answer)


def read_share_group_state_error(body, version, code, msg):
    return _each(body, lambda tid, part: _entry(part["partition"], code, msg, state_epoch=0, start_offset=0,
                                                state_batches=[]))


# ---- WriteShareGroupState ---------------------------------------------------------------

def write_share_group_state(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Merge the written batches into each share-partition's state (fenced by the epochs)."""
    sc, gid, changed = broker.share_coordinator, body["group_id"], []
    written = _written(broker)

    def answer(tid, part):
        p = part["partition"]
        why = _read_refusal(sc, gid, tid, part, "Write")
        key = (gid, tid, p)
        if why is None and ((written.get(key) or [None])[0] or 0) > part["leader_epoch"]:
            why = _error(ErrorCode.FENCED_LEADER_EPOCH)
        sp = sc.partition(gid, tid, p, create=False)
        if why is None and sp.state_epoch > part["state_epoch"]:
            why = _error(ErrorCode.FENCED_STATE_EPOCH)
        if why is not None:
            return _entry(p, *why)
        sp.load_batches(part["start_offset"], part["state_batches"], sc.delivery_limit(gid), replace=False)
        written[key] = [part["leader_epoch"], part["delivery_complete_count"]]
        changed.append(sp)
        return _entry(p)

    out = _each(body, answer)
    sc.persist(changed)
    return out


def write_share_group_state_error(body, version, code, msg):
    return _each(body, lambda tid, part: _entry(part["partition"], code, msg))


# ---- DeleteShareGroupState ---------------------------------------------------------------

def delete_share_group_state(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Forget each share-partition's state (a tombstone in `__share_group_state`)."""
    sc, gid, asked = broker.share_coordinator, body["group_id"], []

    def answer(tid, part):
        p = part["partition"]
        if p < 0:
            return _entry(p, *_error(INVALID, NEGATIVE_PARTITION))
        if not _partition_exists(broker, tid, p):
            return _entry(p, *_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        asked.append((tid, p))
        _written(broker).pop((gid, tid, p), None)
        return _entry(p)

    out = _each(body, answer)
    sc.forget(gid, asked)
    return out


def delete_share_group_state_error(body, version, code, msg):
    return _each(body, lambda tid, part: _entry(part["partition"], code, msg))


# ---- ReadShareGroupStateSummary -------------------------------------------------------------

def read_share_group_state_summary(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """State epoch, leader epoch, start offset and delivery-complete count (start -1: not initialized)."""
    sc, gid = broker.share_coordinator, body["group_id"]
    written = _written(broker)

    def answer(tid, part):
        p = part["partition"]
        if p < 0:
            return _entry(p, *_error(INVALID, NEGATIVE_PARTITION), state_epoch=0, leader_epoch=0, start_offset=0,
                          delivery_complete_count=-1)
        if not _partition_exists(broker, tid, p):
            return _entry(p, *_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), state_epoch=0, leader_epoch=0,
                          start_offset=0, delivery_complete_count=-1)
        sp = sc.partition(gid, tid, p, create=False)
        if sp is None:
            return _entry(p, state_epoch=0, leader_epoch=0, start_offset=-1, delivery_complete_count=-1)
        leader_epoch, complete = written.get((gid, tid, p), (0, sp.delivery_complete_count()))
        return _entry(p, state_epoch=sp.state_epoch, leader_epoch=leader_epoch or 0, start_offset=sp.start,
                      delivery_complete_count=complete)

    return _each(body, answer)


def read_share_group_state_summary_error(body, version, code, msg):
    return _each(body, lambda tid, part: _entry(part["partition"], code, msg, state_epoch=0, leader_epoch=0,
                                                start_offset=0, delivery_complete_count=-1))
