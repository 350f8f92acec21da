"""What the broker can hold: open files per partition against the process's descriptor limit.

A partition holds one open file per segment, its `.log` (the indexes are mapped, holding no
descriptor: storage.file_map). Creating partitions that the limit cannot hold is refused up front
with Kafka's POLICY_VIOLATION, as Kafka's controller refuses an excessively large creation, and a
start on log dirs that hold more partitions than the limit allows stops with one line naming the
limit to raise, instead of failing half way with "Too many open files".
"""
from __future__ import annotations

import errno
import os
from contextlib import contextmanager

from pylog.core.errors import DataError, PolicyViolationError

try:
    import resource
except ImportError:  # not POSIX: no descriptor limit to read
    resource = None

# descriptors kept free for connections, checkpoints, snapshots and the cleaner
MIN_RESERVE = 256
RESERVE_FRACTION = 0.05


def raise_soft_limit() -> int:
    """Lift the soft open-files limit to the hard one (as the Go runtime and systemd units do for servers);
    returns the limit in force (0: none known)."""
    if resource is None:
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard and soft != resource.RLIM_INFINITY:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return 0 if soft == resource.RLIM_INFINITY else soft


def descriptor_limit() -> int:
    """The soft open-files limit (0: unlimited or unknown)."""
    if resource is None:
        return 0
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 0 if soft == resource.RLIM_INFINITY else soft


def open_descriptors() -> int:
    """How many descriptors the process holds now."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the one listing them
    except OSError:
        return 0


def reserve(limit: int) -> int:
    """Descriptors kept free of partitions under `limit`."""
    return max(MIN_RESERVE, int(limit * RESERVE_FRACTION))


def check_room(new_partitions: int, topic: str) -> None:
    """Refuse (POLICY_VIOLATION) partitions that would take the broker past its descriptor limit."""
    limit = descriptor_limit()
    if not limit or new_partitions <= 0:
        return
    held = open_descriptors()
    room = limit - reserve(limit) - held
    if new_partitions > room:
        raise PolicyViolationError(
            f"cannot create {new_partitions} partitions for topic '{topic}': each partition holds an open file "
            f"and this broker has room for {max(room, 0)} more under its limit of {limit} open files "
            f"({held} open, {reserve(limit)} kept for connections); raise the broker's open-files limit (ulimit -n)")


def check_start(partitions: int, dirs: list) -> None:
    """Before loading: stop with one line when the log dirs hold more partitions than the limit can open."""
    limit = descriptor_limit()
    if not limit:
        return
    need = partitions + reserve(limit) + open_descriptors()
    if need > limit:
        raise DataError(
            f"cannot open the {partitions} partitions in {', '.join(str(d) for d in dirs)}: each holds an open file "
            f"and the open-files limit is {limit}; raise it to at least {need} (ulimit -n {need}) and start again")


@contextmanager
def opening(partitions: int, dirs: list):
    """Loading the partitions: running out of descriptors (EMFILE, ENFILE) or of maps (ENOMEM,
    vm.max_map_count) part way stops the start with one line naming the limit to raise."""
    try:
        yield
    except OSError as e:
        if e.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
            raise
        what = ("memory maps (vm.max_map_count)" if e.errno == errno.ENOMEM
                else f"open files (ulimit -n, now {descriptor_limit()})")
        raise DataError(f"cannot open the {partitions} partitions in {', '.join(str(d) for d in dirs)}: "
                        f"{e.strerror}; raise the limit of {what} and start again") from e
