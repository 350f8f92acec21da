// Producer with keys, headers and GZIP (acks=-1, idempotent), then a consumer
// in a fresh group reads every partition back from the beginning.
// opts: {topic, partitions, count}
'use strict';

const { CompressionTypes } = require('kafkajs');
const { client, main } = require('./common');

main(async ({ bootstrap, opts }) => {
  const kafka = client(bootstrap, 'pylog-js-producer');
  // kafkajs drops messages for partitions missing from its metadata, so the
  // topic is created with its partitions before producing.
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic: opts.topic, numPartitions: opts.partitions }] });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const acks = [];
  const batch = 50;
  for (let start = 0; start < opts.count; start += batch) {
    const messages = [];
    for (let i = start; i < Math.min(start + batch, opts.count); i++) {
      messages.push({
        key: `key-${i}`,
        value: `value-${i}`,
        partition: i % opts.partitions,
        headers: { seq: String(i), source: 'kafkajs' },
      });
    }
    const res = await producer.send({ topic: opts.topic, acks: -1, compression: CompressionTypes.GZIP, messages });
    for (const r of res) acks.push({ partition: r.partition, errorCode: r.errorCode, baseOffset: r.baseOffset });
  }
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `${opts.topic}-reader`, maxWaitTimeInMs: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic: opts.topic, fromBeginning: true });
  const records = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${records.length} of ${opts.count}`)), 20000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const headers = {};
        for (const [k, v] of Object.entries(message.headers || {})) headers[k] = v.toString();
        records.push({
          partition, offset: Number(message.offset), key: message.key.toString(), value: message.value.toString(),
          headers,
        });
        if (records.length >= opts.count) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return { acks, records };
});
