// The five /v1/billing routes over real HTTP with real tokens on real PostgreSQL, the official `stripe` SDK talking
// to a fake provider server started here (test/support/fake-stripe.ts): 501 without a key, the seed's shapes with
// one, the tenant → customer mapping made on first checkout, and provider failures mapped to 400/502.
import test from 'ava';
import Fastify, { type FastifyInstance } from 'fastify';
import { createJwtAuthenticator } from '../../src/auth/jwt-authenticator.ts';
import { BillingService } from '../../src/billing/service.ts';
import { installAuth } from '../../src/gateway/http/auth-hook.ts';
import { registerBillingRoutes } from '../../src/gateway/http/billing-routes.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { installRequestSchemas } from '../../src/gateway/http/request-schemas.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { startFakeStripe, type FakeStripe } from '../support/fake-stripe.ts';
import { makeTestIdp } from '../support/jwks.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';

let tdb: TestDatabase;
let db: Db;
let stripe: FakeStripe;
let bare: FastifyInstance;
let paid: FastifyInstance;
let bareBase: string;
let base: string;
let alice: string;
let carol: string;

const now = Math.floor(Date.UTC(2026, 10, 1) / 1000);

async function serve(billing: BillingService): Promise<{ app: FastifyInstance; base: string; idp: Awaited<ReturnType<typeof makeTestIdp>> }> {
  const idp = await makeTestIdp();
  // As buildHttpApp makes it: schemas checked, never coerced, attached to the routes (request-schemas.ts).
  const app = Fastify({ ajv: { customOptions: { coerceTypes: false, removeAdditional: false } } });
  installRequestSchemas(app);
  installErrorHandling(app);
  installAuth(app, createJwtAuthenticator({ jwksFile: idp.jwksFile, issuer: idp.issuer, audience: idp.audience }));
  registerBillingRoutes(app, billing);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, idp };
}

test.before(async () => {
  tdb = await createTestDatabase({ migrated: true });
  db = await openDb({ url: tdb.url, dataDir: '/tmp' }, silentLogger());
  stripe = await startFakeStripe('sk_test_orch');
  stripe.products.push(
    { id: 'prod_pro', object: 'product', active: true, name: 'Pro', description: 'For small teams', metadata: { tier: 'pro', included_seats: '3' } },
    { id: 'prod_biz', object: 'product', active: true, name: 'Business', description: null, metadata: { tier: 'business', included_seats: '10' } },
    { id: 'prod_misc', object: 'product', active: true, name: 'Sticker pack', description: 'not a tier', metadata: {} },
  );
  const price = (id: string, product: string, amount: number, interval: 'month' | 'year', seat = false) => ({
    id,
    object: 'price',
    active: true,
    currency: 'usd',
    product,
    unit_amount: amount,
    recurring: { interval, interval_count: 1 },
    lookup_key: null,
    metadata: seat ? { kind: 'seat' } : {},
  });
  stripe.prices.push(
    price('price_pro_m', 'prod_pro', 2900, 'month'),
    price('price_pro_y', 'prod_pro', 29000, 'year'),
    price('price_pro_seat_m', 'prod_pro', 900, 'month', true),
    price('price_biz_m', 'prod_biz', 9900, 'month'),
    price('price_misc', 'prod_misc', 500, 'month'),
  );
  const bareSrv = await serve(new BillingService(db, {}, silentLogger()));
  bare = bareSrv.app;
  bareBase = bareSrv.base;
  const paidSrv = await serve(new BillingService(db, { stripe_secret_key: 'sk_test_orch', api_url: stripe.url, return_url: 'https://app.example/billing' }, silentLogger()));
  paid = paidSrv.app;
  base = paidSrv.base;
  alice = await paidSrv.idp.sign({ sub: 'alice', tenant_id: 'acme' });
  carol = await paidSrv.idp.sign({ sub: 'carol', tenant_id: 'globex' });
  // The bare app has its own identity provider; sign its token there.
  bareToken = await bareSrv.idp.sign({ sub: 'alice', tenant_id: 'acme' });
});

let bareToken: string;

test.after.always(async () => {
  await bare?.close();
  await paid?.close();
  await stripe?.close();
  await db?.close();
  await tdb?.drop();
});

async function call(at: string, method: string, p: string, token: string | null, json?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${at}${p}`, { method, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const ROUTES: [string, string, unknown?][] = [
  ['GET', '/v1/billing/prices'],
  ['POST', '/v1/billing/checkout', { price_id: 'price_pro_m' }],
  ['POST', '/v1/billing/portal', {}],
  ['GET', '/v1/billing/subscription'],
  ['GET', '/v1/billing/invoices'],
];

test.serial('without a secret key every billing route answers 501 (and the provider is never called)', async (t) => {
  const before = stripe.requests.length;
  for (const [method, p, body] of ROUTES) {
    const r = await call(bareBase, method, p, bareToken, body);
    t.is(r.status, 501, `${method} ${p}`);
    t.regex(String(r.body.error), /not configured/);
  }
  // Even an invalid checkout body is 501 first: the capability is absent.
  t.is((await call(bareBase, 'POST', '/v1/billing/checkout', bareToken, { nope: 1 })).status, 501);
  t.is(stripe.requests.length, before);
});

test.serial('the routes need a bearer token', async (t) => {
  for (const [method, p, body] of ROUTES) t.is((await call(base, method, p, null, body)).status, 401);
});

test.serial('prices: active recurring prices grouped into the seed tiers by product metadata', async (t) => {
  const r = await call(base, 'GET', '/v1/billing/prices', alice);
  t.is(r.status, 200);
  t.deepEqual(r.body.tiers, [
    {
      tier: 'pro',
      product_id: 'prod_pro',
      name: 'Pro',
      description: 'For small teams',
      included_seats: 3,
      monthly: { price_id: 'price_pro_m', amount: 2900, currency: 'USD' },
      annual: { price_id: 'price_pro_y', amount: 29000, currency: 'USD' },
      seat_monthly: { price_id: 'price_pro_seat_m', amount: 900, currency: 'USD' },
      seat_annual: null,
    },
    {
      tier: 'business',
      product_id: 'prod_biz',
      name: 'Business',
      description: '',
      included_seats: 10,
      monthly: { price_id: 'price_biz_m', amount: 9900, currency: 'USD' },
      annual: null,
      seat_monthly: null,
      seat_annual: null,
    },
  ]);
  const req = stripe.requests.at(-1);
  t.is(req?.authorization, 'Bearer sk_test_orch');
});

test.serial('before any checkout: subscription is free, invoices empty, portal 404', async (t) => {
  const s = await call(base, 'GET', '/v1/billing/subscription', alice);
  t.is(s.status, 200);
  t.deepEqual(s.body, { tier: 'free', status: 'none', current_period_end: null, cancel_at_period_end: false, payment_customer_id: null });
  const i = await call(base, 'GET', '/v1/billing/invoices', alice);
  t.deepEqual(i.body, { invoices: [] });
  const p = await call(base, 'POST', '/v1/billing/portal', alice, {});
  t.is(p.status, 404);
  t.regex(String(p.body.error), /checkout first/);
});

test.serial('checkout validates its body before calling the provider', async (t) => {
  const before = stripe.requests.length;
  for (const body of [{}, { price_id: '' }, { price_id: 3 }, { price_id: 'p', seats: -1 }, { price_id: 'p', seats: 2 }, { price_id: 'p', seats: 1.5, seat_price_id: 's' }, { price_id: 'p', success_url: 'ftp://x' }]) {
    const r = await call(base, 'POST', '/v1/billing/checkout', alice, body);
    t.is(r.status, 400, JSON.stringify(body));
    t.truthy(r.body.error);
  }
  t.is(stripe.requests.length, before);
});

test.serial('checkout: creates the tenant customer once, answers the hosted url, seats as a second line item', async (t) => {
  const r = await call(base, 'POST', '/v1/billing/checkout', alice, { price_id: 'price_pro_m', seat_price_id: 'price_pro_seat_m', seats: 2 });
  t.is(r.status, 200);
  t.regex(String(r.body.url), /^https:\/\/checkout\.fake\/c\/pay\/cs_/);
  t.is(stripe.customers.length, 1);
  t.is((stripe.customers[0]?.metadata as Record<string, unknown>).tenant_id, 'acme');
  const session = [...stripe.requests].reverse().find((q) => q.path === '/v1/checkout/sessions');
  t.is(session?.form.get('mode'), 'subscription');
  t.is(session?.form.get('customer'), stripe.customers[0]?.id as string);
  t.is(session?.form.get('line_items[0][price]'), 'price_pro_m');
  t.is(session?.form.get('line_items[1][price]'), 'price_pro_seat_m');
  t.is(session?.form.get('line_items[1][quantity]'), '2');
  t.is(session?.form.get('success_url'), 'https://app.example/billing?checkout=success');

  // A second checkout reuses the stored mapping: no new customer.
  const again = await call(base, 'POST', '/v1/billing/checkout', alice, { price_id: 'price_biz_m' });
  t.is(again.status, 200);
  t.is(stripe.customers.length, 1);
  const rows = await db.query<{ tenant_id: string; customer_id: string }>('SELECT tenant_id, customer_id FROM billing_customers');
  t.deepEqual(rows.rows, [{ tenant_id: 'acme', customer_id: stripe.customers[0]?.id as string }]);
});

test.serial('an unknown price is the provider refusing the request: 400 with its message', async (t) => {
  const r = await call(base, 'POST', '/v1/billing/checkout', alice, { price_id: 'price_nope' });
  t.is(r.status, 400);
  t.regex(String(r.body.error), /No such price: 'price_nope'/);
});

test.serial('portal, subscription and invoices of a subscribed tenant in the seed shapes', async (t) => {
  const customer = stripe.customers[0]?.id as string;
  stripe.subscriptions.push(
    {
      id: 'sub_old',
      object: 'subscription',
      customer,
      status: 'canceled',
      created: now - 86400 * 60,
      cancel_at_period_end: false,
      items: { object: 'list', data: [{ id: 'si_0', object: 'subscription_item', price: stripe.prices[3], current_period_end: now - 86400 * 30 }] },
    },
    {
      id: 'sub_live',
      object: 'subscription',
      customer,
      status: 'active',
      created: now - 86400,
      cancel_at_period_end: true,
      items: { object: 'list', data: [{ id: 'si_1', object: 'subscription_item', price: stripe.prices[0], current_period_end: now + 86400 * 29 }] },
    },
  );
  stripe.invoices.push(
    { id: 'in_1', object: 'invoice', customer, total: 4700, currency: 'usd', status: 'paid', created: now, invoice_pdf: 'https://pay.fake/invoice/in_1/pdf' },
    { id: 'in_2', object: 'invoice', customer, total: 2900, currency: 'usd', status: 'open', created: now + 60, invoice_pdf: null },
    { id: 'in_other', object: 'invoice', customer: 'cus_someone_else', total: 1, currency: 'usd', status: 'paid', created: now, invoice_pdf: null },
  );

  const portal = await call(base, 'POST', '/v1/billing/portal', alice, {});
  t.is(portal.status, 200);
  t.regex(String(portal.body.url), /^https:\/\/billing\.fake\/p\/session\/bps_/);
  t.is([...stripe.requests].reverse().find((q) => q.path === '/v1/billing_portal/sessions')?.form.get('return_url'), 'https://app.example/billing');

  const sub = await call(base, 'GET', '/v1/billing/subscription', alice);
  t.is(sub.status, 200);
  t.deepEqual(sub.body, {
    tier: 'pro',
    status: 'active',
    current_period_end: new Date((now + 86400 * 29) * 1000).toISOString(),
    cancel_at_period_end: true,
    payment_customer_id: customer,
  });

  const inv = await call(base, 'GET', '/v1/billing/invoices', alice);
  t.is(inv.status, 200);
  t.deepEqual(inv.body.invoices, [
    { id: 'in_1', amount: 4700, currency: 'USD', status: 'paid', created: new Date(now * 1000).toISOString(), pdf_url: 'https://pay.fake/invoice/in_1/pdf' },
    { id: 'in_2', amount: 2900, currency: 'USD', status: 'open', created: new Date((now + 60) * 1000).toISOString(), pdf_url: '' },
  ]);

  // Another tenant sees none of it.
  t.deepEqual((await call(base, 'GET', '/v1/billing/invoices', carol)).body, { invoices: [] });
  t.is(((await call(base, 'GET', '/v1/billing/subscription', carol)).body as { tier: string }).tier, 'free');
});

test.serial('provider failures are 502 with a clear error (outage, bad credentials)', async (t) => {
  stripe.failNext(500, 'api_error', 'the provider is having a bad day', 2); // the SDK retries once
  const outage = await call(base, 'GET', '/v1/billing/prices', alice);
  t.is(outage.status, 502);
  t.regex(String(outage.body.error), /payment provider error \(listing prices\): the provider is having a bad day/);

  stripe.failNext(401, 'invalid_request_error', 'Invalid API Key provided: sk_test_****', 1);
  const auth = await call(base, 'GET', '/v1/billing/invoices', alice);
  t.is(auth.status, 502);
  t.regex(String(auth.body.error), /Invalid API Key/);

  // Nothing listening: a connection error is 502 too.
  const gone = new BillingService(db, { stripe_secret_key: 'sk_test_orch', api_url: 'http://127.0.0.1:9' }, silentLogger());
  const err = await t.throwsAsync(gone.prices());
  t.is((err as { spec?: { http: number } }).spec?.http, 502);
});
