// The billing shapes of seed 000 ("Pricing tier", "Subscription", "Invoice"), as the five /v1/billing routes answer
// them. Amounts are integers in the smallest currency unit; currencies are upper-case ISO 4217 codes.

export interface PriceRef {
  price_id: string;
  amount: number;
  currency: string;
}

export const PAID_TIERS = ['pro', 'business', 'enterprise'] as const;
export type PaidTier = (typeof PAID_TIERS)[number];

export interface PricingTier {
  tier: PaidTier;
  product_id: string;
  name: string;
  description: string;
  included_seats: number;
  monthly: PriceRef | null;
  annual: PriceRef | null;
  seat_monthly: PriceRef | null;
  seat_annual: PriceRef | null;
}

export interface Subscription {
  tier: 'free' | PaidTier;
  /** The provider's status (active, past_due, canceled, trialing, ...); `none` when the tenant never subscribed. */
  status: string;
  /** ISO 8601; null when there is no subscription. */
  current_period_end: string | null;
  cancel_at_period_end: boolean;
  /** null until the tenant's first checkout created its customer. */
  payment_customer_id: string | null;
}

export interface Invoice {
  id: string;
  amount: number;
  currency: string;
  status: 'draft' | 'open' | 'paid' | 'void' | 'uncollectible';
  created: string;
  pdf_url: string;
}

export interface CheckoutRequest {
  price_id: string;
  seat_price_id?: string;
  /** Additional seats, charged at seat_price_id. */
  seats?: number;
  success_url?: string;
  cancel_url?: string;
}
