// Smoke test with the official JS client (@a2a-js/sdk 1.3.0): card, unary, streaming, typed not-found.
// Usage: node smoke.mjs BASE_URL  (run from a directory whose node_modules holds @a2a-js/sdk)
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';

const base = process.argv[2];
const client = await new ClientFactory().createFromUrl(base);
const part = { content: { $case: 'data', value: { skill: 'calculate_metrics', arguments: { values: [2, 40], metric_type: 'sum' } } } };
const message = () => ({ messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [part] });
const out = {};
const task = await client.sendMessage({ message: message() });
out.unaryState = TaskState[task.status.state];
out.unaryData = task.artifacts[0].parts[0].content.value;
out.streamCases = [];
for await (const ev of client.sendMessageStream({ message: message() })) out.streamCases.push(ev.payload.$case);
const got = await client.getTask({ id: task.id });
out.getState = TaskState[got.status.state];
try {
  await client.getTask({ id: 'no-such-task' });
  out.notFound = 'no error';
} catch (err) {
  out.notFound = err.constructor.name;
}
console.log(JSON.stringify(out));
