// Child process of bench/ceilings.mjs (run with --import tsx): the SMTP sink of the delivery
// benchmarks (test/helpers/smtp-sink.ts, keepRaw as bench/send.mjs starts it). Tells its parent
// the port over IPC; answers `{ count: true }` with the messages it accepted; exits on SIGTERM.
import process from 'node:process';
import { startSmtpSink } from '../../test/helpers/smtp-sink.ts';

const sink = await startSmtpSink({ keepRaw: true });
process.on('message', (m) => {
  if (m.count) process.send({ messages: sink.messages.length, distinct: new Set(sink.messages.map((x) => x.messageId)).size });
});
process.on('SIGTERM', () => void sink.close().then(() => process.exit(0)));
process.send({ ready: { port: sink.port } });
