// Admin client: createTopics, fetchTopicMetadata, describeConfigs,
// fetchTopicOffsets, fetchTopicOffsetsByTimestamp, deleteTopics.
// opts: {topic, partitions, configs: {name: value}}
'use strict';

const { ConfigResourceTypes } = require('kafkajs');
const { client, main } = require('./common');

main(async ({ bootstrap, opts }) => {
  const admin = client(bootstrap, 'pylog-js-admin').admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      waitForLeaders: true,
      topics: [{
        topic: opts.topic,
        numPartitions: opts.partitions,
        configEntries: Object.entries(opts.configs || {}).map(([name, value]) => ({ name, value })),
      }],
    });
    // A second create of the same topic answers "not created" (false), not an error.
    const createdAgain = await admin.createTopics({ topics: [{ topic: opts.topic, numPartitions: 1 }] });
    const meta = await admin.fetchTopicMetadata({ topics: [opts.topic] });
    const listed = await admin.listTopics();
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: opts.topic, configNames: Object.keys(opts.configs || {}) }],
    });
    const offsetsBefore = await admin.fetchTopicOffsets(opts.topic);

    const producer = client(bootstrap, 'pylog-js-admin-producer').producer();
    await producer.connect();
    const base = Date.now() - 60000;
    await producer.send({
      topic: opts.topic,
      messages: [0, 1, 2, 3, 4].map((i) => ({ value: `m${i}`, partition: 0, timestamp: String(base + i * 1000) })),
    });
    await producer.disconnect();

    const offsetsAfter = await admin.fetchTopicOffsets(opts.topic);
    const byTime = await admin.fetchTopicOffsetsByTimestamp(opts.topic, base + 2500);
    const deleted = await admin.deleteTopics({ topics: [opts.topic] });
    const listedAfterDelete = await admin.listTopics();
    return {
      created, createdAgain, listed,
      configs: described.resources.map((r) => ({
        errorCode: r.errorCode, name: r.resourceName,
        entries: Object.fromEntries(r.configEntries.map((e) => [e.configName, { value: e.configValue, isDefault: e.isDefault }])),
      })), listedAfterDelete, deleted: deleted === undefined ? true : deleted,
      metadata: meta.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr }))
          .sort((a, b) => a.partition - b.partition),
      })),
      offsetsBefore: offsetsBefore.sort((a, b) => a.partition - b.partition),
      offsetsAfter: offsetsAfter.sort((a, b) => a.partition - b.partition),
      byTime: byTime.sort((a, b) => a.partition - b.partition),
    };
  } finally {
    await admin.disconnect();
  }
});
