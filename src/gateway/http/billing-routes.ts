// The five billing routes of seed 000 (docs/BILLING.md), all in the caller's tenant. Without a payment provider key
// each answers 501 before looking at its body; with one, BillingService does the work and maps provider failures
// (400 for a request the provider refuses, 502 for a provider failure).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BillingService } from '../../billing/service.ts';
import type { CheckoutRequest } from '../../billing/types.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { principalOf } from './auth-hook.ts';

function requireConfigured(billing: BillingService): void {
  if (!billing.configured) throw new OrchError(Errors.NOT_IMPLEMENTED, 'billing is not configured: payment provider secret key not set');
}

function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

function optionalString(b: Record<string, unknown>, name: string): string | undefined {
  const v = b[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw new OrchError(Errors.BAD_REQUEST, `${name} must be a non-empty string`);
  return v;
}

function optionalUrl(b: Record<string, unknown>, name: string): string | undefined {
  const v = optionalString(b, name);
  if (v !== undefined && !/^https?:\/\/\S+$/.test(v)) throw new OrchError(Errors.BAD_REQUEST, `${name} must be an http(s) URL`);
  return v;
}

export function parseCheckout(body: unknown): CheckoutRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new OrchError(Errors.BAD_REQUEST, 'body must be a JSON object');
  const b = body as Record<string, unknown>;
  const price = optionalString(b, 'price_id');
  if (price === undefined) throw new OrchError(Errors.BAD_REQUEST, 'price_id is required');
  const out: CheckoutRequest = { price_id: price };
  const seatPrice = optionalString(b, 'seat_price_id');
  if (seatPrice !== undefined) out.seat_price_id = seatPrice;
  if (b.seats !== undefined && b.seats !== null) {
    if (typeof b.seats !== 'number' || !Number.isInteger(b.seats) || b.seats < 0 || b.seats > 10_000) {
      throw new OrchError(Errors.BAD_REQUEST, 'seats must be an integer between 0 and 10000');
    }
    if (b.seats > 0 && seatPrice === undefined) throw new OrchError(Errors.BAD_REQUEST, 'seats needs seat_price_id');
    out.seats = b.seats;
  }
  const success = optionalUrl(b, 'success_url');
  if (success !== undefined) out.success_url = success;
  const cancel = optionalUrl(b, 'cancel_url');
  if (cancel !== undefined) out.cancel_url = cancel;
  return out;
}

export function registerBillingRoutes(app: FastifyInstance, billing: BillingService): void {
  app.get('/v1/billing/prices', async () => {
    requireConfigured(billing);
    return { tiers: await billing.prices() };
  });
  app.post('/v1/billing/checkout', async (request) => {
    requireConfigured(billing);
    const p = principalOf(request);
    return billing.checkout(p.tenantId, parseCheckout(request.body), originOf(request));
  });
  app.post('/v1/billing/portal', async (request) => {
    requireConfigured(billing);
    return billing.portal(principalOf(request).tenantId, originOf(request));
  });
  app.get('/v1/billing/subscription', async (request) => {
    requireConfigured(billing);
    return billing.subscription(principalOf(request).tenantId);
  });
  app.get('/v1/billing/invoices', async (request) => {
    requireConfigured(billing);
    return { invoices: await billing.invoices(principalOf(request).tenantId) };
  });
}
