// What the payments tests (tests/payments_*_test.ts) share: checkout calls and the rows they read back.
import { api, sql, type TestUser } from './_helpers.ts'

export const SITE = 'http://127.0.0.1:3000'
export const checkoutBody = (o: Record<string, unknown> = {}) => ({
  priceId: 'price_premium_monthly',
  successUrl: `${SITE}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
  cancelUrl: `${SITE}/billing`,
  ...o,
})
export const checkout = (user: TestUser, body: unknown = checkoutBody()) =>
  api('/api/payment/create-checkout-session', { token: user.token, body })

export async function storedCustomer(userId: string): Promise<string | null> {
  const rows = await sql`select stripe_customer_id from private.stripe_customers where user_id = ${userId}`
  return rows[0]?.stripe_customer_id ?? null
}

export async function subscriptionRow(subId: string) {
  const [row] =
    await sql`select user_id, stripe_customer_id, status, current_period_end, cancel_at_period_end,
                                 last_payment_failed_at
                            from public.subscriptions where stripe_subscription_id = ${subId}`
  return row
}
