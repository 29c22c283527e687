// Using a pack: making it one's active pack (one owns it, was shared it, bought it, or it is
// public and free), and buying one with drops in one transaction, safe to retry.
import { z } from '@hono/zod-openapi'
import { badRequest, unwrap } from '../../../_shared/errors.ts'
import { idParams } from '../../../_shared/validation.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { PACK_LIMITS, Purchase, tag } from './shared.ts'

const PurchaseBody = z.object({
  expected_price_drops: z.number().int().min(0).max(PACK_LIMITS.price).optional().openapi({
    description:
      "The price the buyer was shown. The purchase is refused (409) unless it is the pack's price. " +
      "Without it, the purchase is refused (409) once the pack's price has ever changed since its creation.",
  }),
}).strict().openapi('PurchaseTonePack')

export const purchaseRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'post',
      path: '/tone-packs/{id}/activate',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      errors: [403],
      response: z.object({ active_tone_pack_id: z.string(), preferences: z.record(z.string(), z.unknown()) }),
      summary: "Make a pack the caller's active pack",
      description:
        'Sets preferences.active_tone_pack_id, for a pack the caller owns, was shared, bought, or that is ' +
        'public and free (a priced pack must be bought first: 403). Entries then carry `tone_icon_url`, the active ' +
        "pack's image for their mood. Deactivate with PUT /api/user/profile {preferences: {active_tone_pack_id: null}}.",
    }),
    async (c) => {
      const done = unwrap(await c.var.db.rpc('activate_tone_pack', { pack_id: c.req.valid('param').id }))
      return c.json(done as { active_tone_pack_id: string; preferences: Record<string, unknown> })
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/tone-packs/{id}/purchase',
      tag,
      auth: 'bearer',
      params: idParams('id'),
      status: 201,
      body: PurchaseBody,
      bodyRequired: false,
      response: z.object({ purchase: Purchase, balance: z.number().int(), replayed: z.boolean() }),
      errors: [402, 409, 422],
      idempotencyKey:
        '1..200 characters. A repeat with the same key returns the first purchase (`replayed: true`) ' +
        'and charges nothing; the same key for another pack is 422.',
      summary: 'Buy a pack with drops',
      description:
        'One transaction: a `purchase` ledger row of -price_drops (none for a free pack) and the purchase. ' +
        'For a pack that is public or shared with the caller, not their own, not yet bought. Send the price shown to ' +
        'the buyer as `expected_price_drops`: a different price is 409 (the message names the current one); without ' +
        'it, the purchase is 409 once the price has ever changed since the pack was created (the buyer cannot have seen ' +
        "only the current price), naming the current price to confirm. The buyer keeps the pack's images as they " +
        'are now. 402 when the balance is below the price (the message names both), 409 own or already bought; ' +
        'nothing is written then. Send an ' +
        '`Idempotency-Key` header (1..200 characters) to make retries safe: a repeat returns the first purchase ' +
        '(`replayed: true`) and charges nothing; the same key for another pack is 422.',
    }),
    async (c) => {
      const key = c.req.header('idempotency-key')
      if (key !== undefined && (key.trim().length < 1 || key.length > 200)) {
        throw badRequest('Idempotency-Key: must be 1 to 200 characters')
      }
      const expected = c.req.valid('json')?.expected_price_drops
      const done = unwrap(
        await c.var.db.rpc('purchase_tone_pack', {
          pack_id: c.req.valid('param').id,
          idempotency_key: key ?? null,
          expected_price_drops: expected ?? null,
        }),
      )
      const { purchase } = done
      return c.json({
        purchase: {
          id: purchase.id,
          pack_id: purchase.pack_id,
          pack_name: purchase.pack_name,
          price_drops: purchase.price_drops,
          transaction_id: purchase.transaction_id,
          created_at: purchase.created_at,
        },
        balance: done.balance,
        replayed: done.replayed,
      }, 201)
    },
  )
