// The sections of the export that need more than one query, read as the caller: each a
// function of the caller's client, so the document (document.ts) stays a list of keys.
import { type Db, givenArgs } from '../../../_shared/db.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { PAGE_SIZE } from './schema.ts'
import type { z } from '@hono/zod-openapi'
import type { MediaFile } from './schema.ts'

// deno-lint-ignore no-explicit-any
export type Row = Record<string, any>
export type Media = z.infer<typeof MediaFile>

/** Rows of one of the caller's tables, `key` ascending, PAGE_SIZE at a time. */
export async function* pagedRows(
  db: Db,
  table: string,
  columns: string,
  owner: Record<string, string>,
  key: string,
) {
  let after: unknown = null
  for (;;) {
    // deno-lint-ignore no-explicit-any
    let q = (db as any).from(table).select(columns)
    for (const [col, v] of Object.entries(owner)) q = q.eq(col, v)
    if (after !== null) q = q.gt(key, after)
    const rows: Row[] = unwrap(await q.order(key).limit(PAGE_SIZE))
    yield* rows
    if (rows.length < PAGE_SIZE) return
    after = rows[rows.length - 1][key]
  }
}

export async function all(
  db: Db,
  table: string,
  columns: string,
  owner: Record<string, string>,
  order?: string,
): Promise<Row[]> {
  // deno-lint-ignore no-explicit-any
  let q = (db as any).from(table).select(columns)
  for (const [col, v] of Object.entries(owner)) q = q.eq(col, v)
  if (order) q = q.order(order)
  return unwrap(await q)
}

export const mediaPath = (bucket: string, object: string) => `media/${bucket}/${object}`

/** Pieces of JSON text: a value, or an array of rows written as they are read. */
export type Part = string | AsyncIterable<Row> | (() => Promise<unknown>)

export async function* jsonArray(rows: AsyncIterable<Row>) {
  yield '['
  let first = true
  for await (const row of rows) {
    yield (first ? '\n' : ',\n') + JSON.stringify(row)
    first = false
  }
  yield first ? ']' : '\n]'
}

/** The multi-query sections of the caller `me`; `addMedia` records a file for the archive. */
export function sectionReaders(
  db: Db,
  me: { id: string; email: string | null },
  addMedia: (
    bucket: string,
    object: string | null,
    kind: Media['kind'],
  ) => string | null,
) {
  const own = { user_id: me.id }
  async function* entries() {
    let after: { at: string; id: string } | null = null
    for (;;) {
      const page: Row[] = unwrap(
        await db.rpc(
          'export_journal_entries',
          givenArgs({
            after_created_at: after?.at,
            after_id: after?.id,
            page_size: PAGE_SIZE,
          }),
        ),
      )
      for (const e of page) {
        const { background_object, ...rest } = e
        yield {
          ...rest,
          background_path: addMedia(
            'entry-backgrounds',
            background_object,
            'entry_background',
          ),
        }
      }
      if (page.length < PAGE_SIZE) return
      after = {
        at: page[page.length - 1].created_at,
        id: page[page.length - 1].id,
      }
    }
  }

  async function organizations() {
    const owned = await all(db, 'organizations', 'id, name, created_at', {
      owner_id: me.id,
    }, 'created_at')
    const member = await all(
      db,
      'organization_members',
      'org_id, role, joined_at, organizations(name)',
      own,
      'joined_at',
    )
    return [
      ...owned.map((o) => ({
        id: o.id,
        name: o.name,
        role: 'owner',
        joined_at: o.created_at,
      })),
      ...member.filter((m) => !owned.some((o) => o.id === m.org_id))
        .map((m) => ({
          id: m.org_id,
          name: m.organizations?.name ?? '',
          role: m.role,
          joined_at: m.joined_at,
        })),
    ]
  }

  async function teams() {
    const admin = await all(db, 'teams', 'id, org_id, name, created_at', {
      admin_id: me.id,
    }, 'created_at')
    const member = await all(
      db,
      'team_members',
      'team_id, org_id, role, joined_at, teams(name)',
      own,
      'joined_at',
    )
    return [
      ...admin.map((t) => ({
        id: t.id,
        org_id: t.org_id,
        name: t.name,
        role: 'admin',
        joined_at: t.created_at,
      })),
      ...member.filter((m) => !admin.some((t) => t.id === m.team_id))
        .map((m) => ({
          id: m.team_id,
          org_id: m.org_id,
          name: m.teams?.name ?? '',
          role: m.role,
          joined_at: m.joined_at,
        })),
    ]
  }

  async function tonePacks() {
    const owned = await all(
      db,
      'tone_packs',
      'id, name, description, theme, is_public, price_drops, retired_at, created_at, updated_at, tone_pack_images(tone, url, object_name, updated_at)',
      { owner_id: me.id },
      'created_at',
    )
    const purchases = await all(
      db,
      'tone_pack_purchases',
      'id, pack_id, pack_name, price_drops, created_at, tone_pack_purchase_images(tone, url, updated_at)',
      own,
      'created_at',
    )
    const shared = await all(
      db,
      'tone_pack_shares',
      'pack_id, created_at',
      own,
      'created_at',
    )
    // Retired packs (kept for their buyers) only their buyers see under RLS.
    const retired = ((await hidden()).retired_tone_packs as Row[])
      .filter((r) => !owned.some((p) => p.id === r.id))
      .map(({ images, ...p }) => ({ ...p, tone_pack_images: images }))
    return {
      owned: [...owned, ...retired].map(({ tone_pack_images, ...p }) => ({
        ...p,
        images: (tone_pack_images as Row[]).map((im) => ({
          tone: im.tone,
          url: im.url,
          path: addMedia('tone-packs', im.object_name, 'pack_image'),
          updated_at: im.updated_at,
        })),
      })),
      purchases: purchases.map(({ tone_pack_purchase_images, ...p }) => ({
        ...p,
        images: tone_pack_purchase_images,
      })),
      shared_with_me: shared,
    }
  }

  async function* received() {
    let after: { at: string; id: string } | null = null
    for (;;) {
      const page: Row[] = unwrap(
        await db.rpc('received_encouragement_drops', {
          unread_only: false,
          before_date_sent: after?.at ?? null,
          before_id: after?.id ?? null,
          page_size: 100,
        }),
      )
      yield* page
      if (page.length < 100) return
      after = {
        at: page[page.length - 1].date_sent,
        id: page[page.length - 1].id,
      }
    }
  }

  async function* checkins() {
    for await (
      const c of pagedRows(
        db,
        'workout_checkins',
        'id, date, status, activity_type, photo_url, photo_object, photo_timestamp, location_lat, location_lng, timezone, chain_id, chain_continued, streak_days, battle_chips_earned, review_reason, reviewed_at, created_at',
        own,
        'id',
      )
    ) {
      yield {
        ...c,
        photo_path: addMedia(
          'workout-checkins',
          c.photo_object,
          'checkin_photo',
        ),
      }
    }
  }

  async function* plays() {
    for await (
      const p of pagedRows(
        db,
        'music_plays',
        'played_at, track_id, source, music_tracks(name, artists, album)',
        own,
        'played_at',
      )
    ) {
      const { music_tracks, ...rest } = p
      yield { ...rest, track: music_tracks ?? null }
    }
  }

  // The caller's own rows RLS hides from them, read once when first needed.
  let hiddenRows: PromiseLike<Row> | undefined
  const hidden = () => (hiddenRows ??= db.rpc('export_own_hidden_rows').then((r) => unwrap(r) as Row))

  async function* squads() {
    let after: string | null = null
    for (;;) {
      let q = db.from('workout_squads').select(
        'id, date, team_color, user_1_id, user_2_id, user_3_id, created_at',
      )
        .or(
          `user_1_id.eq.${me.id},user_2_id.eq.${me.id},user_3_id.eq.${me.id}`,
        )
      if (after !== null) q = q.gt('id', after)
      const page = unwrap(await q.order('id').limit(PAGE_SIZE))
      for (const { user_1_id, user_2_id, user_3_id, ...squad } of page) {
        yield {
          ...squad,
          members: [user_1_id, user_2_id, user_3_id].filter((u): u is string => u !== null),
        }
      }
      if (page.length < PAGE_SIZE) return
      after = page[page.length - 1].id
    }
  }

  const one = async (table: string, columns: string) => (await all(db, table, columns, own))[0] ?? null

  return {
    entries,
    organizations,
    teams,
    tonePacks,
    received,
    checkins,
    plays,
    squads,
    hidden,
    one,
  }
}
