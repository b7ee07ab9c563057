// Child process of bench/ceilings.mjs: Fastify 5 answering POST /v1/track with no I/O, the body
// validated and the answer serialised by JSON schemas of /v1/track's shapes (Fastify compiles
// both), no logger. Tells its parent the port over IPC; exits on SIGTERM.
import { randomUUID } from 'node:crypto';
import process from 'node:process';
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = {
  type: 'object',
  required: ['email', 'event'],
  properties: {
    email: { type: 'string', format: 'email' },
    event: { type: 'string', minLength: 1, maxLength: 100 },
    subscribed: { type: 'boolean' },
    data: { type: 'object' },
  },
};
const response = {
  200: {
    type: 'object',
    properties: {
      success: { type: 'boolean' },
      data: { type: 'object', properties: { contact: { type: 'string' }, event: { type: 'string' }, timestamp: { type: 'string' } } },
    },
  },
};
app.post('/v1/track', { schema: { body, response } }, async () => ({
  success: true,
  data: { contact: randomUUID(), event: randomUUID(), timestamp: new Date().toISOString() },
}));
await app.listen({ port: 0, host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
process.send({ ready: { port: app.server.address().port } });
