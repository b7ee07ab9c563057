import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/** One request the fake received: the form body flattened (`line_items[0][price]` stays one key). */
export interface StripeCall {
  method: string;
  path: string;
  query: Record<string, string>;
  form: Record<string, string>;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
}

export interface FakeInvoice {
  id: string;
  customer: string;
  number: string;
  status: string;
  total: number;
  amount_due: number;
  currency: string;
  created: number;
  period_start: number;
  period_end: number;
}

/**
 * A small real HTTP server that answers the Stripe API calls billing makes (customers, Checkout
 * and portal sessions, invoice list and preview) on 127.0.0.1, recording each call; the official
 * client reaches it through STRIPE_API_URL. Not a mock of our code: Stripe is outside the machine.
 */
export interface FakeStripe {
  url: string;
  calls: StripeCall[];
  /** Invoices listed per customer (newest first, as Stripe lists them). */
  invoices: FakeInvoice[];
  /** The next API answers are 500 (the client retries once: set 2 to fail a call). */
  failNext: number;
  close(): Promise<void>;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
  res.end(JSON.stringify(body));
}

function previewInvoice(customer: string): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return { id: null, object: 'invoice', customer, amount_due: 2900, total: 2900, currency: 'usd', period_start: now, period_end: now + 30 * 86400, next_payment_attempt: now + 30 * 86400, lines: { object: 'list', data: [], has_more: false } };
}

function route(fake: FakeStripe, call: StripeCall): [number, unknown] {
  const { method, path, form } = call;
  if (method === 'POST' && path === '/v1/customers') {
    return [200, { id: id('cus'), object: 'customer', email: form.email ?? null, name: form.name ?? null, metadata: { projectId: form['metadata[projectId]'] } }];
  }
  if (method === 'POST' && path === '/v1/checkout/sessions') {
    const sid = id('cs_test');
    return [200, { id: sid, object: 'checkout.session', mode: form.mode, customer: form.customer, client_reference_id: form.client_reference_id, url: `https://checkout.stripe.test/c/pay/${sid}`, status: 'open' }];
  }
  if (method === 'POST' && path === '/v1/billing_portal/sessions') {
    const sid = id('bps');
    return [200, { id: sid, object: 'billing_portal.session', customer: form.customer, return_url: form.return_url, url: `https://billing.stripe.test/p/session/${sid}` }];
  }
  if (method === 'GET' && path === '/v1/invoices') {
    const data = fake.invoices.filter((i) => i.customer === call.query.customer).map((i) => ({ object: 'invoice', hosted_invoice_url: `https://invoice.stripe.test/${i.id}`, invoice_pdf: `https://pay.stripe.test/${i.id}.pdf`, ...i }));
    return [200, { object: 'list', url: '/v1/invoices', has_more: false, data }];
  }
  if (method === 'POST' && path === '/v1/invoices/create_preview') return [200, previewInvoice(form.customer ?? '')];
  return [404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` } }];
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const fake: FakeStripe = { url: '', calls: [], invoices: [], failNext: 0, close: async () => undefined };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const call: StripeCall = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        form: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))),
        authorization: req.headers.authorization,
        idempotencyKey: typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined,
      };
      fake.calls.push(call);
      if (fake.failNext > 0) {
        fake.failNext -= 1;
        send(res, 500, { error: { type: 'api_error', message: 'fake failure' } });
        return;
      }
      const [status, body] = route(fake, call);
      send(res, status, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve, reject) => {
      server.closeAllConnections();
      server.close((err) => (err ? reject(err) : resolve()));
    });
  return fake;
}

/** A Stripe event as Stripe sends it: a JSON body and its real Stripe-Signature header. */
export function signedEvent(secret: string, event: { type: string; object: Record<string, unknown>; id?: string; created?: number }, opts: { timestamp?: number } = {}) {
  const payload = JSON.stringify({
    id: event.id ?? id('evt'),
    object: 'event',
    api_version: '2026-10-28.endive',
    created: event.created ?? Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: event.type,
    data: { object: event.object },
  });
  const header = Stripe.webhooks.generateTestHeaderString({ payload, secret, ...(opts.timestamp !== undefined && { timestamp: opts.timestamp }) });
  return { payload, header };
}
