// Two consumers in one group on one topic: wait until the group is stable
// with every partition owned once and every record consumed, then report the
// assignments (from GROUP_JOIN events and from admin.describeGroups) and what
// each member read. Auto-commit commits what was consumed. A short fetch wait
// (maxWaitTimeInMs) lets a member notice a rebalance and leave sooner.
// opts: {topic, group, count, partitions}; creates the topic, produces count
// records ("before-i") round-robin over its partitions, and once the group is
// stable count more ("after-i").
'use strict';

const { AssignerProtocol } = require('kafkajs');
const { client, main } = require('./common');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

main(async ({ bootstrap, opts }) => {
  const kafka = client(bootstrap, 'pylog-js-group');
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic: opts.topic, numPartitions: opts.partitions }] });
  const producer = kafka.producer();
  await producer.connect();
  const produce = (tag) => producer.send({
    topic: opts.topic,
    messages: Array.from({ length: opts.count }, (_, i) => ({ value: `${tag}-${i}`, partition: i % opts.partitions })),
  });
  await produce('before');

  const members = [0, 1].map((n) => ({
    n, joined: null, records: [],
    consumer: kafka.consumer({ groupId: opts.group, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 500 }),
  }));
  for (const m of members) {
    m.consumer.on(m.consumer.events.GROUP_JOIN, (e) => {
      m.joined = e.payload;
      if (process.env.PYLOG_JS_TRACE) process.stderr.write(`${Date.now() % 100000} join ${m.n} ${JSON.stringify(e.payload)}\n`);
    });
    await m.consumer.connect();
    await m.consumer.subscribe({ topic: opts.topic, fromBeginning: true });
    await m.consumer.run({
      eachMessage: async ({ partition, message }) => {
        m.records.push({ partition, offset: Number(message.offset), value: message.value.toString() });
      },
    });
  }

  const owned = (m) => (m.joined ? (m.joined.memberAssignment[opts.topic] || []) : []);
  const distinct = () => new Set(members.flatMap((m) => m.records.map((r) => `${r.partition}:${r.offset}`))).size;
  let deadline = Date.now() + 25000;
  for (;;) {
    const a = owned(members[0]);
    const b = owned(members[1]);
    const covered = new Set([...a, ...b]).size === opts.partitions;
    if (a.length > 0 && b.length > 0 && a.length + b.length === opts.partitions && covered
        && distinct() >= opts.count) break;
    if (Date.now() > deadline) {
      throw new Error(`not settled: assignments ${JSON.stringify([a, b])}, consumed ${distinct()} of ${opts.count}`);
    }
    await sleep(100);
  }

  if (process.env.PYLOG_JS_TRACE) process.stderr.write(`${Date.now() % 100000} settled\n`);
  const settled = members.map((m) => ({ ...m.joined, assignment: owned(m) }));

  // With the group stable, records produced now go to each partition's one owner.
  await produce('after');
  await producer.disconnect();
  deadline = Date.now() + 15000;
  while (distinct() < 2 * opts.count) {
    if (Date.now() > deadline) throw new Error(`consumed ${distinct()} of ${2 * opts.count}`);
    await sleep(50);
  }
  const { groups } = await admin.describeGroups([opts.group]);
  await admin.disconnect();
  const described = groups.map((g) => ({
    groupId: g.groupId, state: g.state, protocolType: g.protocolType, protocol: g.protocol,
    members: g.members.map((mm) => {
      const asg = AssignerProtocol.MemberAssignment.decode(mm.memberAssignment);
      return { memberId: mm.memberId, clientId: mm.clientId, assignment: asg ? asg.assignment : null };
    }),
  }));

  // Disconnect commits the consumed offsets (auto-commit) and leaves the group.
  await Promise.all(members.map((m) => m.consumer.disconnect()));
  if (process.env.PYLOG_JS_TRACE) process.stderr.write(`${Date.now() % 100000} disconnected\n`);
  return {
    members: members.map((m, i) => ({
      memberId: settled[i].memberId, isLeader: settled[i].isLeader,
      groupProtocol: settled[i].groupProtocol, assignment: settled[i].assignment, records: m.records,
    })),
    described,
  };
});
