// Billing through the payment provider's official SDK (`stripe`), docs/BILLING.md. One service for the five
// /v1/billing routes. Without `billing.stripe_secret_key` every operation answers 501 (seed 000). The tenant's
// provider customer is created on its first checkout and remembered in billing_customers (migration 011).
// Provider failures: a request the provider refuses as invalid (an unknown price id) is 400; anything else the
// provider does (outage, bad credentials, rate limit, unreachable) is 502 with the provider's message.
import { randomUUID } from 'node:crypto';
import type Stripe from 'stripe';
import { lazyRequire } from '../util/lazy-require.ts';
import { Errors, OrchError } from '../errors/catalog.ts';
import type { Logger } from '../logging/logger.ts';
import type { Db } from '../storage/db.ts';
import { PAID_TIERS, type CheckoutRequest, type Invoice, type PaidTier, type PriceRef, type PricingTier, type Subscription } from './types.ts';

export interface BillingSettings {
  stripe_secret_key?: string;
  /** The provider's address (e.g. http://127.0.0.1:4242 for a test's fake server); default the SDK's. */
  api_url?: string;
  /** Where checkout and the portal send the user back; default `<request origin>/ui`. */
  return_url?: string;
}

const INVOICE_STATUSES = new Set(['draft', 'open', 'paid', 'void', 'uncollectible']);
/** Subscriptions that still entitle the tenant to its tier, best first. */
const LIVE_STATUSES = ['active', 'trialing', 'past_due', 'unpaid', 'incomplete'];

function isPaidTier(v: unknown): v is PaidTier {
  return typeof v === 'string' && (PAID_TIERS as readonly string[]).includes(v);
}

function iso(unixSeconds: number | null | undefined): string | null {
  return typeof unixSeconds === 'number' ? new Date(unixSeconds * 1000).toISOString() : null;
}

function priceRef(p: Stripe.Price): PriceRef | null {
  if (p.unit_amount === null) return null;
  return { price_id: p.id, amount: p.unit_amount, currency: p.currency.toUpperCase() };
}

function productOf(p: Stripe.Price): Stripe.Product | undefined {
  return typeof p.product === 'object' && p.product !== null && !('deleted' in p.product && p.product.deleted) ? (p.product as Stripe.Product) : undefined;
}

/** A seat price is marked `metadata.kind: seat` (or has a lookup key ending in `_seat_monthly`/`_seat_annual`). */
function isSeatPrice(p: Stripe.Price): boolean {
  return p.metadata?.kind === 'seat' || /seat/i.test(p.lookup_key ?? '');
}

/** Required only when a secret key is configured: the SDK is ~150 modules that an unbilled node never needs. */
const loadStripe = lazyRequire<typeof Stripe>('stripe');

export class BillingService {
  private readonly stripe: Stripe | undefined;

  constructor(
    private readonly db: Db,
    private readonly settings: BillingSettings,
    private readonly logger: Logger,
  ) {
    if (settings.stripe_secret_key) {
      const base = settings.api_url ? new URL(settings.api_url) : undefined;
      const StripeSdk = loadStripe();
      this.stripe = new StripeSdk(settings.stripe_secret_key, {
        ...(base
          ? {
              host: base.hostname,
              port: base.port || (base.protocol === 'https:' ? 443 : 80),
              protocol: base.protocol === 'http:' ? 'http' : 'https',
            }
          : {}),
        maxNetworkRetries: 1,
        timeout: 20_000,
        telemetry: false,
      });
    }
  }

  get configured(): boolean {
    return this.stripe !== undefined;
  }

  private client(): Stripe {
    if (!this.stripe) throw new OrchError(Errors.NOT_IMPLEMENTED, 'billing is not configured: payment provider secret key not set (billing.stripe_secret_key)');
    return this.stripe;
  }

  /** Runs a provider call and maps its failure (docs/BILLING.md "Errors"). */
  private async call<T>(what: string, fn: (s: Stripe) => Promise<T>): Promise<T> {
    const s = this.client();
    try {
      return await fn(s);
    } catch (err) {
      // client() succeeded, so the SDK is loaded.
      const StripeSdk = loadStripe();
      if (err instanceof StripeSdk.errors.StripeInvalidRequestError) {
        throw new OrchError(Errors.BAD_REQUEST, `payment provider refused ${what}: ${err.message}`, { cause: err });
      }
      if (err instanceof StripeSdk.errors.StripeError) {
        this.logger.warn({ err: { type: err.type, message: err.message, statusCode: err.statusCode } }, `payment provider failed: ${what}`);
        throw new OrchError(Errors.BAD_GATEWAY, `payment provider error (${what}): ${err.message}`, { cause: err });
      }
      throw err;
    }
  }

  /** Active recurring prices grouped by product into the seed's tiers; the tier is the product's metadata.tier. */
  async prices(): Promise<PricingTier[]> {
    const prices = await this.call('listing prices', async (s) => {
      const out: Stripe.Price[] = [];
      for await (const p of s.prices.list({ active: true, limit: 100, expand: ['data.product'] })) out.push(p);
      return out;
    });
    const tiers = new Map<string, PricingTier>();
    for (const p of prices) {
      const product = productOf(p);
      if (!product || product.active === false || !isPaidTier(product.metadata?.tier) || !p.recurring) continue;
      let tier = tiers.get(product.id);
      if (!tier) {
        const seats = Number.parseInt(product.metadata?.included_seats ?? '', 10);
        tier = {
          tier: product.metadata.tier as PaidTier,
          product_id: product.id,
          name: product.name,
          description: product.description ?? '',
          included_seats: Number.isFinite(seats) && seats >= 0 ? seats : 1,
          monthly: null,
          annual: null,
          seat_monthly: null,
          seat_annual: null,
        };
        tiers.set(product.id, tier);
      }
      const ref = priceRef(p);
      const interval = p.recurring.interval === 'month' ? 'monthly' : p.recurring.interval === 'year' ? 'annual' : undefined;
      if (!ref || !interval) continue;
      const slot = isSeatPrice(p) ? (`seat_${interval}` as const) : interval;
      tier[slot] ??= ref;
    }
    return [...tiers.values()].sort((a, b) => PAID_TIERS.indexOf(a.tier) - PAID_TIERS.indexOf(b.tier) || a.name.localeCompare(b.name));
  }

  private async customerOf(tenant: string): Promise<string | undefined> {
    const r = await this.db.query<{ customer_id: string }>(`SELECT customer_id FROM billing_customers WHERE tenant_id = $1`, [tenant]);
    return r.rows[0]?.customer_id;
  }

  /**
   * The tenant's customer, created at the provider on first use. The provider call carries an idempotency key
   * derived from the tenant, so two concurrent first checkouts get the same customer; the mapping row is then
   * written once (ON CONFLICT DO NOTHING) and read back.
   */
  private async ensureCustomer(tenant: string): Promise<string> {
    const known = await this.customerOf(tenant);
    if (known) return known;
    const customer = await this.call('creating the customer', (s) =>
      s.customers.create({ metadata: { tenant_id: tenant }, description: `orch tenant ${tenant}` }, { idempotencyKey: `orch-customer-${tenant}` }),
    );
    await this.db.query(`INSERT INTO billing_customers (tenant_id, customer_id) VALUES ($1, $2) ON CONFLICT (tenant_id) DO NOTHING`, [tenant, customer.id]);
    const stored = await this.customerOf(tenant);
    if (!stored) throw new OrchError(Errors.INTERNAL, 'billing customer mapping was not stored');
    return stored;
  }

  async checkout(tenant: string, req: CheckoutRequest, origin: string): Promise<{ url: string }> {
    this.client();
    const customer = await this.ensureCustomer(tenant);
    const back = this.settings.return_url ?? `${origin}/ui`;
    const items: Stripe.Checkout.SessionCreateParams.LineItem[] = [{ price: req.price_id, quantity: 1 }];
    if (req.seat_price_id && (req.seats ?? 0) > 0) items.push({ price: req.seat_price_id, quantity: req.seats ?? 0 });
    const session = await this.call('creating the checkout session', (s) =>
      s.checkout.sessions.create(
        {
          mode: 'subscription',
          customer,
          line_items: items,
          client_reference_id: tenant,
          success_url: req.success_url ?? `${back}?checkout=success`,
          cancel_url: req.cancel_url ?? `${back}?checkout=cancelled`,
          subscription_data: { metadata: { tenant_id: tenant } },
        },
        { idempotencyKey: `orch-checkout-${randomUUID()}` },
      ),
    );
    if (!session.url) throw new OrchError(Errors.BAD_GATEWAY, 'payment provider returned a checkout session without a url');
    return { url: session.url };
  }

  async portal(tenant: string, origin: string): Promise<{ url: string }> {
    this.client();
    const customer = await this.customerOf(tenant);
    if (!customer) throw new OrchError(Errors.NOT_FOUND, 'this tenant has no billing customer yet: start a checkout first');
    const session = await this.call('creating the portal session', (s) =>
      s.billingPortal.sessions.create({ customer, return_url: this.settings.return_url ?? `${origin}/ui` }),
    );
    return { url: session.url };
  }

  async subscription(tenant: string): Promise<Subscription> {
    this.client();
    const customer = await this.customerOf(tenant);
    const free: Subscription = { tier: 'free', status: 'none', current_period_end: null, cancel_at_period_end: false, payment_customer_id: customer ?? null };
    if (!customer) return free;
    const subs = await this.call('listing subscriptions', (s) =>
      s.subscriptions.list({ customer, status: 'all', limit: 20, expand: ['data.items.data.price.product'] }),
    );
    const rank = (x: Stripe.Subscription): number => {
      const i = LIVE_STATUSES.indexOf(x.status);
      return i < 0 ? LIVE_STATUSES.length : i;
    };
    const sub = [...subs.data].sort((a, b) => rank(a) - rank(b) || b.created - a.created)[0];
    if (!sub) return free;
    const item = sub.items.data.find((i) => isPaidTier(productOf(i.price)?.metadata?.tier)) ?? sub.items.data[0];
    const tier = item ? productOf(item.price)?.metadata?.tier : undefined;
    // Newer API versions carry the period on the item; older ones on the subscription itself.
    const periodEnd = item?.current_period_end ?? (sub as unknown as { current_period_end?: number }).current_period_end;
    return {
      tier: LIVE_STATUSES.includes(sub.status) && isPaidTier(tier) ? tier : 'free',
      status: sub.status,
      current_period_end: iso(periodEnd),
      cancel_at_period_end: sub.cancel_at_period_end,
      payment_customer_id: customer,
    };
  }

  async invoices(tenant: string): Promise<Invoice[]> {
    this.client();
    const customer = await this.customerOf(tenant);
    if (!customer) return [];
    const list = await this.call('listing invoices', (s) => s.invoices.list({ customer, limit: 100 }));
    return list.data.map((inv) => ({
      id: inv.id ?? '',
      amount: inv.total,
      currency: inv.currency.toUpperCase(),
      status: (INVOICE_STATUSES.has(inv.status ?? '') ? inv.status : 'draft') as Invoice['status'],
      created: iso(inv.created) ?? '',
      pdf_url: inv.invoice_pdf ?? '',
    }));
  }
}
