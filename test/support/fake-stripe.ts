// A fake payment provider: a real HTTP server speaking the slice of the Stripe REST API that BillingService uses
// (prices, customers, checkout and portal sessions, subscriptions, invoices), started by a test on 127.0.0.1. The
// official SDK talks to it through its host/port/protocol override. It keeps what it was sent so a test can check
// the requests, and it can be told to fail (an outage, bad credentials) to exercise the error mapping.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeStripeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
  authorization: string | undefined;
  idempotencyKey: string | undefined;
}

type Obj = Record<string, unknown>;

export interface FakeStripe {
  url: string;
  requests: FakeStripeRequest[];
  products: Obj[];
  prices: Obj[];
  customers: Obj[];
  subscriptions: Obj[];
  invoices: Obj[];
  /** The next `count` requests answer this status and Stripe error body. */
  failNext(status: number, type: string, message: string, count?: number): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function list(path: string, data: Obj[]): Obj {
  return { object: 'list', url: path, has_more: false, data };
}

/** Replaces an `expand`ed product id with the product object, as Stripe does. */
function withProduct(price: Obj, products: Obj[]): Obj {
  return { ...price, product: products.find((p) => p.id === price.product) ?? price.product };
}

export async function startFakeStripe(secretKey = 'sk_test_fake'): Promise<FakeStripe> {
  let seq = 0;
  const nextId = (prefix: string): string => `${prefix}_fake${(++seq).toString().padStart(6, '0')}`;
  let failure: { status: number; type: string; message: string; count: number } | undefined;
  const fake: Omit<FakeStripe, 'url' | 'close' | 'failNext'> = { requests: [], products: [], prices: [], customers: [], subscriptions: [], invoices: [] };
  const idempotent = new Map<string, Obj>();

  const handle = async (req: IncomingMessage): Promise<{ status: number; body: Obj }> => {
    const u = new URL(req.url ?? '/', 'http://fake');
    const raw = req.method === 'GET' ? '' : await readBody(req);
    const r: FakeStripeRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      form: new URLSearchParams(raw),
      authorization: req.headers.authorization,
      idempotencyKey: typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined,
    };
    fake.requests.push(r);
    if (failure && failure.count > 0) {
      failure.count -= 1;
      return { status: failure.status, body: { error: { type: failure.type, message: failure.message } } };
    }
    if (r.authorization !== `Bearer ${secretKey}`) {
      return { status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } } };
    }
    const key = `${r.method} ${r.path}`;
    const expandProducts = [...r.query.entries()].some(([k, v]) => k.startsWith('expand') && v.includes('product'));
    if (key === 'GET /v1/prices') {
      const active = r.query.get('active');
      const data = fake.prices.filter((p) => active === null || String(p.active) === active);
      return { status: 200, body: list('/v1/prices', expandProducts ? data.map((p) => withProduct(p, fake.products)) : data) };
    }
    if (key === 'POST /v1/customers') {
      const prior = r.idempotencyKey ? idempotent.get(r.idempotencyKey) : undefined;
      if (prior) return { status: 200, body: prior };
      const c: Obj = { id: nextId('cus'), object: 'customer', metadata: { tenant_id: r.form.get('metadata[tenant_id]') }, description: r.form.get('description') };
      fake.customers.push(c);
      if (r.idempotencyKey) idempotent.set(r.idempotencyKey, c);
      return { status: 200, body: c };
    }
    if (key === 'POST /v1/checkout/sessions') {
      const price = r.form.get('line_items[0][price]');
      if (!fake.prices.some((p) => p.id === price)) {
        return { status: 400, body: { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such price: '${price}'` } } };
      }
      const id = nextId('cs');
      return { status: 200, body: { id, object: 'checkout.session', url: `https://checkout.fake/c/pay/${id}`, customer: r.form.get('customer'), mode: r.form.get('mode') } };
    }
    if (key === 'POST /v1/billing_portal/sessions') {
      const id = nextId('bps');
      return { status: 200, body: { id, object: 'billing_portal.session', url: `https://billing.fake/p/session/${id}`, customer: r.form.get('customer') } };
    }
    if (key === 'GET /v1/subscriptions') {
      const customer = r.query.get('customer');
      const data = fake.subscriptions
        .filter((s) => s.customer === customer)
        .map((s) => {
          const items = s.items as { data: Obj[] };
          return { ...s, items: { ...items, data: items.data.map((i) => ({ ...i, price: expandProducts ? withProduct(i.price as Obj, fake.products) : i.price })) } };
        });
      return { status: 200, body: list('/v1/subscriptions', data) };
    }
    if (key === 'GET /v1/invoices') {
      const customer = r.query.get('customer');
      return { status: 200, body: list('/v1/invoices', fake.invoices.filter((i) => i.customer === customer)) };
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${key})` } } };
  };

  const server: Server = createServer((req, res) => {
    handle(req)
      .then(({ status, body }) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${seq}` });
        res.end(JSON.stringify(body));
      })
      .catch((err: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: String(err) } }));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    failNext(status: number, type: string, message: string, count = 1) {
      failure = { status, type, message, count };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
