// Shared pieces of the client journeys (tests/client_*_test.ts): the other side of the app that
// a journey's user meets (a seller who shares a priced tone pack), and image sizes.
import { decode } from 'fast-png'
import { api, createUser } from './_helpers.ts'

export const PASSWORD = 'correct horse battery staple'
export const PACK_PRICE = 10

/** Another user creates a priced tone pack and shares it with `email`: the sharee is notified
 *  (`tone_pack.shared`) and may buy it. Returns the pack's id. */
export async function sellerSharesPackWith(email: string): Promise<string> {
  const seller = await createUser({ prefix: 'client-seller' })
  const created = await api('/api/tone-packs', {
    token: seller.token,
    body: { name: 'Seller pack', theme: 'animals', price_drops: PACK_PRICE },
  })
  if (created.status !== 201) {
    throw new Error(`creating the pack: ${created.status} ${JSON.stringify(created.body)}`)
  }
  const shared = await api(`/api/tone-packs/${created.body.pack.id}/share`, {
    token: seller.token,
    body: { email },
  })
  if (shared.status !== 200 && shared.status !== 201) {
    throw new Error(`sharing the pack: ${shared.status} ${JSON.stringify(shared.body)}`)
  }
  return created.body.pack.id
}

/** Width and height of a PNG. */
export function pngSize(bytes: Uint8Array): [number, number] {
  const png = decode(bytes)
  return [png.width, png.height]
}
