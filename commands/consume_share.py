"""`pylog consume --share-group G`: read a topic as a member of a share group (KIP-932, queues).

Each record is acknowledged after it is printed: ACCEPT, or REJECT / RELEASE for
records matching --reject-if / --release-if (the --filter syntax), so a shell
pipeline can drop poison records or hand records back to the group.
"""
from __future__ import annotations

import sys
import time

from pylog.commands.client_common import client_props
from pylog.commands.console import err, plural
from pylog.commands.consume_select import RecordFilter
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.records.batch import Record


def _rule(exprs: tuple[str, ...], option: str):
    if not exprs:
        return None
    try:
        return RecordFilter(exprs)
    except Exception as e:  # noqa: BLE001 - UsageError naming --filter: say which option
        raise type(e)(str(e).replace("--filter", option)) from None


def consume_share(topic, bootstrap, group, properties, renderer, keep, max_messages, timeout_ms,
                  reject_if=(), release_if=()) -> None:
    """Consume TOPIC in share group `group` until --max-messages, --timeout-ms or Ctrl-C."""
    from pylog.core.client.share_consumer import ACCEPT, REJECT, RELEASE, ShareConsumer

    reject, release = _rule(reject_if, "--reject-if"), _rule(release_if, "--release-if")
    props = client_props(bootstrap, properties, CONSUMER_CONFIGS, **{"group.id": group})
    props["share.acknowledgement.mode"] = "explicit"
    consumer = ShareConsumer(props)
    count = rejected = released = 0
    write = sys.stdout.write
    try:
        consumer.subscribe([topic])
        last = time.monotonic()
        while max_messages is None or count < max_messages:
            recs = consumer.poll(0.2)
            now = time.monotonic()
            if not recs:
                if timeout_ms is not None and (now - last) * 1000 >= timeout_ms:
                    break
                continue
            last = now
            for r in recs:
                if max_messages is not None and count >= max_messages:
                    consumer.acknowledge(r, RELEASE)  # beyond the limit: another consumer gets it now
                    continue
                if reject is not None and reject.keep(r):
                    consumer.acknowledge(r, REJECT)
                    rejected += 1
                    continue
                if release is not None and release.keep(r):
                    consumer.acknowledge(r, RELEASE)
                    released += 1
                    continue
                if not keep or keep.keep(r):
                    write(renderer.render(r.topic, r.partition, [Record(r.offset, r.timestamp, r.key, r.value,
                                                                        r.headers)]))
                    count += 1
                consumer.acknowledge(r, ACCEPT)
            sys.stdout.flush()
            failed = [f"{tp}: {e}" for tp, e in consumer.commit_sync().items() if e is not None]
            for f in failed:
                err.print(f"acknowledgement failed: {f}", style="yellow", markup=False)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    extra = []
    if rejected:
        extra.append(f"{rejected} rejected")
    if released:
        extra.append(f"{released} released")
    more = f" ({', '.join(extra)})" if extra else ""
    err.print(f"consumed {plural(count, 'record')} from {topic} in share group {group}{more}", style="dim")
