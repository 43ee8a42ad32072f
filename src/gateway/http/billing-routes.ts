// The five billing routes of seed 000 (docs/BILLING.md), all in the caller's tenant. Without a payment provider key
// each answers 501 before looking at its body (in preValidation, i.e. before the route schema checks it); with one, BillingService does the work and maps provider failures
// (400 for a request the provider refuses, 502 for a provider failure).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { BillingService } from '../../billing/service.ts';
import type { CheckoutRequest } from '../../billing/types.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import { principalOf } from './auth-hook.ts';
import type { RequestOf } from './request-schemas.ts';

function requireConfigured(billing: BillingService): void {
  if (!billing.configured) throw new OrchError(Errors.NOT_IMPLEMENTED, 'billing is not configured: payment provider secret key not set');
}

function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/**
 * The checkout request from its body, which the route schema has checked field by field (non-empty strings, seats
 * 0–10000, http(s) URLs; null = left out). What a schema cannot say is checked here: seats need a seat price.
 */
export function parseCheckout(b: RequestOf<'POST /v1/billing/checkout'>['Body']): CheckoutRequest {
  const out: CheckoutRequest = { price_id: b.price_id };
  if (b.seat_price_id) out.seat_price_id = b.seat_price_id;
  if (b.seats !== undefined && b.seats !== null) {
    if (b.seats > 0 && !b.seat_price_id) throw new OrchError(Errors.BAD_REQUEST, 'seats needs seat_price_id');
    out.seats = b.seats;
  }
  if (b.success_url) out.success_url = b.success_url;
  if (b.cancel_url) out.cancel_url = b.cancel_url;
  return out;
}

export function registerBillingRoutes(app: FastifyInstance, billing: BillingService): void {
  // Before the body is validated: an unconfigured node answers 501 to any body, as the seed says.
  const configured = { preValidation: async (): Promise<void> => requireConfigured(billing) };
  app.get('/v1/billing/prices', configured, async () => ({ tiers: await billing.prices() }));
  app.post<RequestOf<'POST /v1/billing/checkout'>>('/v1/billing/checkout', configured, async (request) =>
    billing.checkout(principalOf(request).tenantId, parseCheckout(request.body), originOf(request)),
  );
  app.post('/v1/billing/portal', configured, async (request) => billing.portal(principalOf(request).tenantId, originOf(request)));
  app.get('/v1/billing/subscription', configured, async (request) => billing.subscription(principalOf(request).tenantId));
  app.get('/v1/billing/invoices', configured, async (request) => ({ invoices: await billing.invoices(principalOf(request).tenantId) }));
}
