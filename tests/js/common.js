// Shared by the kafkajs interop scripts: argument parsing, a Kafka client on
// the broker under test, and the JSON result on stdout (logs go to stderr so
// stdout carries exactly one JSON document).
'use strict';

const { Kafka, logLevel } = require('kafkajs');

function args() {
  const [bootstrap, json] = process.argv.slice(2);
  if (!bootstrap) {
    process.stderr.write(`usage: node ${process.argv[1]} HOST:PORT [JSON-ARGS]\n`);
    process.exit(2);
  }
  return { bootstrap, opts: json ? JSON.parse(json) : {} };
}

function stderrLogger() {
  return ({ namespace, level, label, log }) => {
    const { message, ...extra } = log;
    process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`);
  };
}

function client(bootstrap, clientId) {
  return new Kafka({
    clientId,
    brokers: [bootstrap],
    logLevel: logLevel.WARN,
    logCreator: stderrLogger,
  });
}

function main(fn) {
  fn(args()).then(
    (result) => {
      process.stdout.write(JSON.stringify(result) + '\n');
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`FAILED: ${e && e.stack ? e.stack : e}\n`);
      process.exit(1);
    },
  );
}

module.exports = { client, main };
