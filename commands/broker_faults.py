"""`pylog broker faults add|list|clear`: a running broker's fault rules, over its metrics
listener's /faults endpoints (served when the broker runs with --allow-faults)."""
from __future__ import annotations

import json
from http import HTTPStatus

import click

from pylog.commands.broker_admin_client import DEFAULT_URL, admin_url_from, request_json
from pylog.core.errors import DataError, UsageError


def _url_option(f):
    f = click.option("--config", "config_file", type=click.Path(dir_okay=False, exists=True), default=None,
                     metavar="FILE", help="server.properties to take metrics.listener from.")(f)
    f = click.option("--timeout", type=float, default=10.0, show_default=True,
                     help="Seconds to wait for the broker's answer.")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print the broker's JSON answer.")(f)
    return click.option("--metrics-url", "--url", "url", default=None, metavar="http://HOST:PORT",
                        help=f"The broker's metrics.listener (default: metrics.listener from --config, "
                             f"else {DEFAULT_URL}).")(f)


def _call(url: str | None, config_file: str | None, method: str, path: str, timeout: float, payload=None):
    base = admin_url_from(url, config_file)

    def refused(where, e):
        raw = e.read()
        if e.code == HTTPStatus.FORBIDDEN:
            raise DataError(f"{base}: the broker does not allow fault injection (start it with --allow-faults "
                            f"or faults.enable=true)") from None
        try:
            msg = json.loads(raw).get("error") or raw.decode()
        except ValueError:
            msg = raw.decode(errors="replace").strip()
        if e.code == HTTPStatus.BAD_REQUEST:
            raise UsageError(msg) from None
        raise DataError(f"{where}: HTTP {e.code}: {msg}") from None

    return request_json(base, path, timeout, refused, method, payload)


@click.group()
def faults():
    """Inject faults into a running broker, to test clients' error handling.

    Rules answer matching requests with an error code (with or without performing
    them), a delay, no answer, a closed connection or a throttle, or take a
    partition offline or a coordinator away, for the next N requests, a fraction
    of them, a time window or until cleared. The broker must run with --allow-faults (faults.enable=true) and a metrics.listener; these
    commands use its /faults endpoints (403 otherwise). Each injected fault is logged at INFO
    with the rule that fired and counted in pylog_broker_faults_injected_total. A broker can
    also load rules at start-up with `pylog broker start --faults FILE` (a JSON list of the
    rules `add --json` prints), and Python tests use `EmbeddedBroker.faults.add(...)`.

    A rules file (and the JSON these commands send and print) holds a list of
    objects with the fields: kind (error, delay, no_answer, close, throttle,
    offline, coordinator), id, api, versions, topic, partition, group,
    transactional_id, client_id, principal, error, after_handling, ms, count,
    fraction, for_ms and start_in_ms; for example
    [{"api": "Produce", "topic": "orders", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}].

    \b
    Examples:
      pylog broker start --set metrics.listener=http://127.0.0.1:9404 --allow-faults &
      pylog broker faults add --metrics-url http://127.0.0.1:9404 --api Produce --topic orders \\
          --error NOT_LEADER_OR_FOLLOWER --count 3
      pylog broker faults add --api Produce --topic orders --error REQUEST_TIMED_OUT --after-handling
      pylog broker faults add --offline --topic orders --partition 0
      pylog broker faults add --coordinator-unavailable --group billing --for 10
      pylog broker faults list
      pylog broker faults clear r2
      pylog broker faults clear
    """


@faults.command()
@click.option("--api", default=None, metavar="NAME", help="Kafka API name or key (Produce, Fetch, Heartbeat, ...); "
                                                          "default: any.")
@click.option("--versions", default=None, metavar="N[-M]", help="Only these request versions.")
@click.option("--topic", default=None, help="Only requests naming this topic (per partition where the API has "
                                            "partitions).")
@click.option("--partition", type=int, default=None, help="Only this partition of --topic.")
@click.option("--group", default=None, help="Only requests for this consumer group.")
@click.option("--transactional-id", default=None, help="Only requests for this transactional id.")
@click.option("--client-id", default=None, help="Only requests with this client.id.")
@click.option("--principal", default=None, metavar="User:NAME", help="Only requests from this principal.")
@click.option("--error", default=None, metavar="NAME", help="Answer with this Kafka error (e.g. "
                                                            "NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT).")
@click.option("--after-handling", is_flag=True, help="Perform the request first (with --error, --no-answer or "
                                                     "--close): written, but the answer is an error or lost.")
@click.option("--delay", "delay_ms", type=click.IntRange(1), default=None, metavar="MS",
              help="Send the answer MS milliseconds late.")
@click.option("--no-answer", is_flag=True, help="Never answer (the client's request timeout fires).")
@click.option("--close", is_flag=True, help="Close the connection instead of answering.")
@click.option("--throttle", "throttle_ms", type=click.IntRange(1), default=None, metavar="MS",
              help="Answer with throttle_time_ms=MS and mute the connection for as long.")
@click.option("--offline", is_flag=True, help="Take --topic (or one --partition) offline: no leader until cleared.")
@click.option("--coordinator-unavailable", is_flag=True,
              help="The coordinator of --group / --transactional-id (default: every one) is unavailable.")
@click.option("--count", type=click.IntRange(1), default=None, help="Fire on the next N matching requests only.")
@click.option("--fraction", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Fire on this share of matching requests (0-1).")
@click.option("--for", "for_s", type=click.FloatRange(0, min_open=True), default=None, metavar="SECONDS",
              help="Active for this long, then done.")
@click.option("--start-in", "start_s", type=click.FloatRange(0), default=0, metavar="SECONDS",
              help="Active only after this long.")
@click.option("--id", "rule_id", default=None, help="The rule's id (default: r1, r2, ...).")
@_url_option
def add(url, config_file, timeout, as_json, rule_id, start_s, for_s, **options):
    """Add a fault rule to a running broker; prints its id.

    Exactly one action: --error, --delay, --no-answer, --close, --throttle, --offline or
    --coordinator-unavailable (with --offline or --coordinator-unavailable, --error names the
    code answered instead of NOT_LEADER_OR_FOLLOWER / COORDINATOR_NOT_AVAILABLE). Without
    --count, --fraction or --for a rule stays until cleared.
    """
    from pylog.broker.ops.request_faults import rule_from_options

    rule = rule_from_options(**options, for_ms=int(for_s * 1000) if for_s is not None else None,
                             start_in_ms=int(start_s * 1000))
    payload = rule.to_dict()
    for k in ("hits", "state", "id"):
        payload.pop(k, None)
    if rule_id:
        payload["id"] = rule_id
    out = _call(url, config_file, "POST", "/faults", timeout, payload)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"{out['id']}: {_describe(out)}")


@faults.command(name="list")
@_url_option
def list_(url, config_file, timeout, as_json):
    """List a running broker's fault rules, with how often each fired."""
    out = _call(url, config_file, "GET", "/faults", timeout)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    if not out["rules"]:
        click.echo("no fault rules")
        return
    from rich.markup import escape

    from pylog.commands.console import print_table

    print_table([("id", "left"), ("rule", "left"), ("hits", "right"), ("state", "left")],
                [(escape(r["id"]), escape(_describe(r)), r["hits"], r["state"]) for r in out["rules"]])


@faults.command()
@click.argument("rule_ids", nargs=-1, metavar="[ID]...")
@_url_option
def clear(url, config_file, timeout, as_json, rule_ids):
    """Clear the given rules (default: every rule) on a running broker."""
    if rule_ids:
        n = sum(_call(url, config_file, "DELETE", f"/faults/{i}", timeout)["cleared"] for i in rule_ids)
    else:
        n = _call(url, config_file, "DELETE", "/faults", timeout)["cleared"]
    if as_json:
        click.echo(json.dumps({"cleared": n}))
    else:
        click.echo(f"cleared {n} fault rule(s)")


def _describe(d: dict) -> str:
    from pylog.broker.ops.request_faults import rule_from_dict

    r = rule_from_dict({k: v for k, v in d.items() if k not in ("hits", "state")})
    return r.describe()
