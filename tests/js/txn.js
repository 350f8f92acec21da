// kafkajs transactions: one committed and one aborted transaction (the aborted one
// with offsets sent to a group), then read back with readUncommitted false and true.
// opts: {topic, group, count}
'use strict';

const { client, main } = require('./common');

async function readAll(kafka, topic, groupId, readUncommitted, expect) {
  const consumer = kafka.consumer({ groupId, readUncommitted, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(), 15000);  // the read_committed view may hold fewer
    consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value.toString());
        if (values.length >= expect) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return values;
}

// kafkajs 2.2.4 gives up on a retriable answer to AddOffsetsToTxn / TxnOffsetCommit
// (CONCURRENT_TRANSACTIONS while the previous transaction's markers are written,
// NOT_COORDINATOR while a fresh group's coordinator loads): retried here
async function sendOffsets(txn, args) {
  for (let i = 0; ; i++) {
    try { return await txn.sendOffsets(args); } catch (e) {
      if (!e.retriable || i >= 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

main(async ({ bootstrap, opts }) => {
  const kafka = client(bootstrap, 'pylog-js-txn');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic: opts.topic, numPartitions: 1 }] });
  // kafkajs does not retry TxnOffsetCommit on NOT_COORDINATOR: on a fresh cluster, wait until the
  // group's coordinator answers (its __consumer_offsets partition loaded) before sending offsets
  for (let i = 0; ; i++) {
    try { await admin.fetchOffsets({ groupId: opts.group, topics: [opts.topic] }); break; } catch (e) {
      if (i >= 60) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const producer = kafka.producer({ transactionalId: `${opts.topic}-tx`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = (tag) => Array.from({ length: opts.count }, (_, i) => ({ value: `${tag}-${i}` }));

  const t1 = await producer.transaction();
  await t1.send({ topic: opts.topic, messages: messages('commit') });
  await t1.commit();

  const t2 = await producer.transaction();
  await t2.send({ topic: opts.topic, messages: messages('abort') });
  await sendOffsets(t2, { consumerGroupId: opts.group, topics: [{ topic: opts.topic, partitions: [{ partition: 0, offset: '7' }] }] });
  await t2.abort();

  const t3 = await producer.transaction();
  await sendOffsets(t3, { consumerGroupId: opts.group, topics: [{ topic: opts.topic, partitions: [{ partition: 0, offset: '5' }] }] });
  await t3.commit();
  await producer.disconnect();

  // Kafka answers EndTxn before its commit marker reaches the group's __consumer_offsets
  // partition, and OffsetFetch below v7 (kafkajs 2.2.4's) shows a transaction's offsets only
  // once that marker is written: until then the group has none (-1). Wait (30 s at most) for
  // the group to show an offset; which offset it shows is the test's to judge.
  let groupOffset = '-1';
  for (const deadline = Date.now() + 30000; groupOffset === '-1' && Date.now() < deadline;) {
    const offsets = await admin.fetchOffsets({ groupId: opts.group, topics: [opts.topic] });
    groupOffset = offsets[0].partitions[0].offset;
    if (groupOffset === '-1') await new Promise((r) => setTimeout(r, 100));
  }
  await admin.disconnect();
  const committed = await readAll(kafka, opts.topic, `${opts.topic}-rc`, false, opts.count);
  const everything = await readAll(kafka, opts.topic, `${opts.topic}-ru`, true, 2 * opts.count);
  return { committed, everything, groupOffset };
});
