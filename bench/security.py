"""`python -m bench security`: produce and fetch over PLAINTEXT, SSL and SASL_SSL.

pylog's broker and Apache Kafka (the version tests/kafka/pom.xml pins, tests/support/kafka_peer.py) each get three
listeners on the same settings (a PEM keystore, SCRAM-SHA-512 users made with
`--add-scram`); a confluent-kafka (librdkafka) producer writes N 1 KiB
messages with acks=1 and a consumer reads them back, per listener. TLS costs
pylog twice: encryption, and the loss of sendfile (fetch bytes are copied
through the TLS socket). The clients are bench/broker.py's (same settings).

Options: --quick (fewer messages), --no-kafka, --rounds N (best kept),
--record (append a section to bench/RESULTS.md).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench._util import free_port, start_pylog_broker

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the test PKI and the Kafka harness

USER, PASSWORD = "bench", "bench-secret"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")


class PylogSecure:
    name = "pylog"

    def __init__(self, work: Path, pki):
        self.ports = {p: free_port() for p in PROTOCOLS}
        props = work / "pylog.properties"
        props.write_text("\n".join([
            "listeners=" + ",".join(f"{p}://127.0.0.1:{port}" for p, port in self.ports.items()),
            "ssl.keystore.type=PEM", f"ssl.keystore.location={pki.server_keystore}",
            "sasl.enabled.mechanisms=SCRAM-SHA-512", "log.flush.interval.messages=9223372036854775807",
        ]) + "\n")
        self.proc, _ = start_pylog_broker(
            ["--log-dir", work / "pylog-data", "--config", props,
             "--add-scram", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]", "--log-level", "warning"])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


class KafkaSecure:
    name = "Apache Kafka"

    def __init__(self, work: Path, pki):
        from support.kafka_peer import KAFKA_VERSION, KafkaNode

        self.name = f"Apache Kafka {KAFKA_VERSION}"

        node = KafkaNode(work / "kafka", format_args=(
            "--add-scram", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"))
        self.ports = {"PLAINTEXT": node.port, "SSL": free_port(), "SASL_SSL": free_port()}
        jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        node.overrides.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                         f"SSL://127.0.0.1:{self.ports['SSL']},SASL_SSL://127.0.0.1:{self.ports['SASL_SSL']}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{self.ports['SSL']},"
                                    f"SASL_SSL://127.0.0.1:{self.ports['SASL_SSL']}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
        })
        self.node = node.format().start()

    def stop(self):
        self.node.stop()


def client_conf(broker, proto: str, pki) -> dict:
    conf = {"bootstrap.servers": f"127.0.0.1:{broker.ports[proto]}", "security.protocol": proto}
    if proto != "PLAINTEXT":
        conf["ssl.ca.location"] = str(pki.ca)
    if proto == "SASL_SSL":
        conf.update({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": PASSWORD})
    return conf


def main(argv: list[str]) -> int:
    from support.security_fixtures import make_pki

    from bench.broker import ck_consume, ck_produce

    ap = argparse.ArgumentParser(prog="python -m bench security")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-kafka", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args(argv)
    n, size = (50_000, 1024) if args.quick else (150_000, 1024)
    work = Path(tempfile.mkdtemp(prefix="pylog-bench-security-"))
    results: dict[tuple[str, str, str], float] = {}
    load_before = os.getloadavg()[0]
    try:
        pki = make_pki(work / "pki")
        kinds = [PylogSecure] + ([] if args.no_kafka else [KafkaSecure])
        for kind in kinds:
            b = kind(work, pki)
            try:
                for r in range(args.rounds):
                    for proto in PROTOCOLS:
                        conf = client_conf(b, proto, pki)
                        topic = f"bench-{proto.lower()}-{r}"
                        mb = n * size / 1e6
                        boot = conf.pop("bootstrap.servers")
                        w = ck_produce(boot, topic, n, size, "1", conf)
                        rd = ck_consume(boot, topic, n, conf)
                        for what, took in (("produce", w), ("fetch", rd)):
                            key = (b.name, proto, what)
                            results[key] = max(results.get(key, 0.0), mb / took)
            finally:
                b.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = render(results, n, size, argv, (load_before, os.getloadavg()[0]))
    print(text)
    if args.record:
        with open(Path(__file__).with_name("RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    return 0


def render(results, n, size, argv, load) -> str:
    import confluent_kafka

    brokers = sorted({k[0] for k in results}, key=lambda b: b != "pylog")
    lines = ["## security: produce and fetch over TLS and SASL_SSL", "",
             "`" + " ".join(["python -m bench security", *argv]) + f"` — {n} x {size} B messages, acks=1, "
             f"one partition, confluent-kafka {confluent_kafka.__version__} / librdkafka "
             f"{confluent_kafka.libversion()[0]}; SASL_SSL uses SCRAM-SHA-512; best of the rounds, MB/s; "
             f"load average {load[0]:.1f} -> {load[1]:.1f} on 2 shared cores.", "",
             "| broker | workload | PLAINTEXT | SSL | SASL_SSL | SSL vs PLAINTEXT |", "|---|---|---|---|---|---|"]
    for b in brokers:
        for what in ("produce", "fetch"):
            row = [results.get((b, p, what), 0.0) for p in PROTOCOLS]
            ratio = row[1] / row[0] if row[0] else 0.0
            lines.append(f"| {b} | {what} | {row[0]:.0f} | {row[1]:.0f} | {row[2]:.0f} | {ratio:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
