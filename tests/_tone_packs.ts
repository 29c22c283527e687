// Tone pack pieces shared by the tone pack tests.
import { api, sql, type TestUser } from './_helpers.ts'

/** POST /api/tone-packs as the owner (a random name, theme origami unless given); throws unless 201. */
export async function createPack(owner: TestUser, body: Record<string, unknown> = {}) {
  const res = await api('/api/tone-packs', {
    token: owner.token,
    body: { name: `Pack ${crypto.randomUUID().slice(0, 8)}`, theme: 'origami', ...body },
  })
  if (res.status !== 201) throw new Error(`POST /api/tone-packs: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.pack
}

/** Maps an image to a tone straight in SQL (an object row and the mapping), for tests about something else. */
export async function imageFor(packId: string, ownerId: string, tone: string) {
  const name = `${ownerId}/${packId}/${tone}-${Date.now()}${Math.floor(Math.random() * 1000)}.png`
  const url = `http://icons.test/storage/v1/object/public/tone-packs/${name}`
  await sql`insert into storage.objects (bucket_id, name, owner_id) values ('tone-packs', ${name}, ${ownerId})`
  await sql`insert into public.tone_pack_images (pack_id, tone, object_name, url) values (${packId}, ${tone}, ${name}, ${url})`
  return url
}
