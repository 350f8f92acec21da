"""`pylog check-cluster run|analyze`: a Jepsen-style consistency check of a Kafka-compatible cluster."""
from __future__ import annotations

from pathlib import Path

import click

from pylog.commands.console import emit_json
from pylog.commands.options import json_option, properties_options
from pylog.core.errors import PylogError, UsageError

EXIT_CLEAN, EXIT_ANOMALIES, EXIT_NOT_RUN = 0, 1, 3
WORKLOAD_NAMES = ("queue", "txn", "groups", "share")


class AnomaliesFound(PylogError):
    exit_code = EXIT_ANOMALIES


class RunFailed(PylogError):
    exit_code = EXIT_NOT_RUN


def _per_kind(items: tuple[str, ...], option: str) -> dict[str, str]:
    out = {}
    for item in items:
        kind, sep, command = item.partition("=")
        if not sep or not kind or not command:
            raise UsageError(f"{option} {item!r}: expected KIND=COMMAND")
        out[kind] = command
    return out


def _finish(results: dict, as_json: bool, out: Path) -> None:
    from pylog.checker.report import summary

    if as_json:
        emit_json(results)
    else:
        click.echo(summary(results))
        click.echo(f"history, results.json and report.html in {out}", err=True)
    if not results["valid"]:
        raise AnomaliesFound(f"{sum(results['anomaly_counts'].values())} anomalies: "
                             + ", ".join(f"{k} {n}" for k, n in results["anomaly_counts"].items()))


@click.group("check-cluster")
def check_cluster():
    """Check that a Kafka-compatible cluster keeps Kafka's promises under faults.

    `run` drives the cluster with workloads (pylog's own clients) while faults are
    injected, writing every operation to a history as it happens; the checker then
    looks for lost writes, duplicates, aborted and uncommitted reads, poll skips,
    non-monotonic polls and sends, offsets with two values, consumers starting
    away from their group's committed offset, share-group double acceptance and
    transaction cycles (G0, G1a, G1b, G1c). `analyze` checks a saved history again.

    Exit status: 0 no anomaly, 1 anomalies found, 2 usage error, 3 the run could
    not be carried out (for example the broker never started).
    """


@check_cluster.command("run")
@click.option("--workload", "-w", "workloads", multiple=True, required=True, type=click.Choice(WORKLOAD_NAMES),
              help="queue (sends, transactions, polls), txn (consume-transform-produce, exactly once), groups "
                   "(classic and consumer-protocol members joining, leaving, committing) or share (share "
                   "groups); repeatable: several at once.")
@click.option("--bootstrap-server", "-b", "bootstrap", default=None, metavar="HOST:PORT[,...]",
              help="The cluster to check (or --local).")
@click.option("--local", type=click.Choice(["pylog", "kafka"]), default=None,
              help="Start a broker on a temporary directory and check it: pylog's, or Apache Kafka from "
                   "KAFKA_HOME or KAFKA_CLASSPATH.")
@click.option("--kafka-home", envvar="KAFKA_HOME", default=None, metavar="DIR",
              help="With --local kafka: an unpacked Apache Kafka (its libs/*.jar).")
@click.option("--kafka-classpath", envvar="KAFKA_CLASSPATH", default=None, metavar="CP|FILE",
              help="With --local kafka: Kafka's class path, or a file holding one.")
@click.option("--duration", type=click.FloatRange(min=1), default=60, show_default=True, metavar="SECONDS",
              help="How long the workloads run (the readers then drain).")
@click.option("--fault", "faults", multiple=True, metavar="KIND",
              help="kill (kill -9, then restart), pause (SIGSTOP, then SIGCONT), rules (--fault-rules on a "
                   "pylog broker) or a kind given --fault-command; repeatable, injected in turn.")
@click.option("--fault-command", multiple=True, metavar="KIND=COMMAND",
              help="A shell command that injects fault KIND (also replaces kill's or pause's built-in action).")
@click.option("--heal-command", multiple=True, metavar="KIND=COMMAND",
              help="A shell command that heals fault KIND after --fault-hold.")
@click.option("--fault-rules", type=click.Path(dir_okay=False, exists=True), default=None, metavar="FILE",
              help="pylog fault rules (a JSON list, as `pylog broker faults add --json` prints) for --fault rules.")
@click.option("--metrics-url", default=None, metavar="URL",
              help="For --fault rules against -b: the pylog broker's metrics.listener.")
@click.option("--fault-interval", type=click.FloatRange(min=0.1), default=5, show_default=True,
              metavar="SECONDS", help="Quiet time before each fault.")
@click.option("--fault-hold", type=click.FloatRange(min=0), default=3, show_default=True, metavar="SECONDS",
              help="How long a fault lasts before it is healed.")
@click.option("--rate", type=click.FloatRange(min=0), default=50, show_default=True,
              help="Writes per second across all writers (0: as fast as they can).")
@click.option("--replication-factor", type=click.IntRange(min=1), default=1, show_default=True,
              help="Of the topics the run creates.")
@click.option("--out", "-o", "out", type=click.Path(file_okay=False), required=True, metavar="DIR",
              help="Where the history, results.json and report.html go.")
@properties_options
@json_option
def run(workloads, bootstrap, local, kafka_home, kafka_classpath, duration, faults, fault_command, heal_command,
        fault_rules, metrics_url, fault_interval, fault_hold, rate, replication_factor, out, properties, as_json):
    """Run workloads against a cluster with faults, then check the history.

    The history (DIR/history.jsonl) is appended as operations happen, so a run
    that crashed can still be checked with `analyze`. Results go to
    DIR/results.json and DIR/report.html (a timeline per client with the fault
    windows shaded and the operations of each anomaly marked).
    """
    from pylog.checker.faults import check_kinds
    from pylog.checker.runner import RunConfig
    from pylog.checker.runner import run as run_check

    if (bootstrap is None) == (local is None):
        raise UsageError("give either -b SERVERS or --local pylog|kafka")
    from pylog.core.config import CONSUMER_CONFIGS, PRODUCER_CONFIGS
    for key in properties:
        if key not in PRODUCER_CONFIGS and key not in CONSUMER_CONFIGS:
            raise UsageError(f"-X {key}: not a Kafka producer or consumer property")
    commands, heals = _per_kind(fault_command, "--fault-command"), _per_kind(heal_command, "--heal-command")
    check_kinds(faults, local, commands, fault_rules, metrics_url)
    if local == "kafka":
        from pylog.checker.local import kafka_classpath as find_kafka
        find_kafka(kafka_home, kafka_classpath)
    config = RunConfig(workloads=list(dict.fromkeys(workloads)), out=Path(out), duration=duration,
                       bootstrap=bootstrap, local=local, client_props=properties, faults=list(faults),
                       fault_commands=commands, heal_commands=heals, fault_rules=fault_rules,
                       metrics_url=metrics_url, fault_interval=fault_interval, fault_hold=fault_hold, rate=rate,
                       replication_factor=replication_factor, kafka_home=kafka_home, kafka_classpath=kafka_classpath)
    try:
        results = run_check(config)
    except (UsageError, KeyboardInterrupt):
        raise
    except Exception as e:  # noqa: BLE001 - the cluster could not be driven: say why in one line
        raise RunFailed(f"check-cluster run failed: {e} (the history so far is in {out})") from None
    _finish(results, as_json, Path(out))


@check_cluster.command("analyze")
@click.argument("directory", type=click.Path(file_okay=False, exists=True), metavar="DIR")
@json_option
def analyze(directory, as_json):
    """Check the history in DIR again (DIR/history.jsonl), rewriting results.json and report.html."""
    from pylog.checker.analysis import analyze_dir
    from pylog.checker.history import HISTORY_FILE
    from pylog.checker.runner import finish

    out = Path(directory)
    if not (out / HISTORY_FILE).is_file():
        raise UsageError(f"{out}: no {HISTORY_FILE} (the directory `check-cluster run --out` wrote)")
    results = analyze_dir(out)
    finish(out, results)
    _finish(results, as_json, out)


__all__ = ["check_cluster"]
