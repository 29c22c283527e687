// WatermelonDB itself (its LokiJS adapter, in memory) as two devices of one user, syncing with
// synchronize() against GET/POST /api/sync exactly as docs/sync.md shows a client doing it.
import { strict as assert } from 'node:assert'
import { appSchema, Database, Model, tableSchema } from '@nozbe/watermelondb'
import LokiModule from '@nozbe/watermelondb/adapters/lokijs/index.js'
import MigrationsModule from '@nozbe/watermelondb/Schema/migrations/index.js'
import RandomIdModule from '@nozbe/watermelondb/utils/common/randomId/index.js'
import SyncModule from '@nozbe/watermelondb/sync/index.js'
import { api, createUser, sql, test, type TestUser } from './_helpers.ts'

// deno-lint-ignore no-explicit-any
const cjs = (m: any) => m.default ?? m
const LokiJSAdapter = cjs(LokiModule)
const { schemaMigrations, createTable, addColumns } = cjs(MigrationsModule)
const { setGenerator } = RandomIdModule
const { synchronize } = cjs(SyncModule)

// Records made on a device get UUIDs, as the server asks (docs/sync.md).
setGenerator(() => crypto.randomUUID())

const schema = appSchema({
  version: 2,
  tables: [
    tableSchema({
      name: 'notebooks',
      columns: [
        { name: 'user_id', type: 'string' },
        { name: 'name', type: 'string' },
        { name: 'metadata_visibility', type: 'string' },
        { name: 'content_visibility', type: 'string' },
        { name: 'team_id', type: 'string', isOptional: true },
        { name: 'org_id', type: 'string', isOptional: true },
        { name: 'created_at', type: 'number' },
        { name: 'updated_at', type: 'number' },
      ],
    }),
    tableSchema({
      name: 'journal_entries',
      columns: [
        { name: 'user_id', type: 'string' },
        { name: 'notebook_id', type: 'string', isOptional: true },
        { name: 'title', type: 'string' },
        { name: 'content', type: 'string' },
        { name: 'mood', type: 'string', isOptional: true },
        { name: 'tags', type: 'string' },
        { name: 'metadata_visibility', type: 'string' },
        { name: 'content_visibility', type: 'string' },
        { name: 'team_id', type: 'string', isOptional: true },
        { name: 'org_id', type: 'string', isOptional: true },
        { name: 'created_at', type: 'number' },
        { name: 'updated_at', type: 'number' },
        { name: 'mood_detected', type: 'boolean' },
        { name: 'music_track_id', type: 'string', isOptional: true },
        { name: 'background_url', type: 'string', isOptional: true },
      ],
    }),
    tableSchema({
      name: 'goals',
      columns: [
        { name: 'user_id', type: 'string' },
        { name: 'title', type: 'string' },
        { name: 'description', type: 'string' },
        { name: 'target_date', type: 'string', isOptional: true },
        { name: 'status', type: 'string' },
        { name: 'created_at', type: 'number' },
        { name: 'updated_at', type: 'number' },
      ],
    }),
    tableSchema({
      name: 'goal_check_ins',
      columns: [
        { name: 'user_id', type: 'string' },
        { name: 'goal_id', type: 'string' },
        { name: 'status', type: 'string' },
        { name: 'notes', type: 'string' },
        { name: 'created_at', type: 'number' },
      ],
    }),
  ],
})

class Notebook extends Model {
  static override table = 'notebooks'
}
class JournalEntry extends Model {
  static override table = 'journal_entries'
}
class Goal extends Model {
  static override table = 'goals'
}
class GoalCheckIn extends Model {
  static override table = 'goal_check_ins'
}

function device() {
  const adapter = new LokiJSAdapter({
    schema,
    // The app's version 2 added check-ins and three entry columns (as the server's version 2 did).
    migrations: schemaMigrations({
      migrations: [{
        toVersion: 2,
        steps: [
          createTable({ name: 'goal_check_ins', columns: schema.tables.goal_check_ins.columnArray }),
          addColumns({
            table: 'journal_entries',
            columns: ['mood_detected', 'music_track_id', 'background_url'].map((c) => schema.tables.journal_entries.columns[c]),
          }),
        ],
      }],
    }),
    useWebWorker: false,
    useIncrementalIndexedDB: false,
    dbName: `device-${crypto.randomUUID()}`,
  })
  return new Database({ adapter, modelClasses: [Notebook, JournalEntry, Goal, GoalCheckIn] })
}

/** docs/sync.md's client: pullChanges and pushChanges calling the endpoints. */
async function sync(db: Database, user: TestUser, beforePush?: () => Promise<unknown>) {
  await synchronize({
    database: db,
    migrationsEnabledAtVersion: 1,
    pullChanges: async ({ lastPulledAt, schemaVersion, migration }: {
      lastPulledAt: number | null
      schemaVersion: number
      migration: unknown
    }) => {
      const q = new URLSearchParams({
        last_pulled_at: String(lastPulledAt ?? null),
        schema_version: String(schemaVersion),
        migration: JSON.stringify(migration ?? null),
      })
      const res = await api(`/api/sync?${q}`, { token: user.token })
      if (res.status !== 200) throw new Error(`pull: ${res.status} ${JSON.stringify(res.body)}`)
      await beforePush?.()
      return res.body
    },
    pushChanges: async ({ changes, lastPulledAt }: { changes: unknown; lastPulledAt: number }) => {
      const res = await api(`/api/sync?last_pulled_at=${lastPulledAt}`, { token: user.token, body: changes })
      if (res.status !== 200) throw new Error(`push: ${res.status} ${JSON.stringify(res.body)}`)
    },
  })
}

const raws = async (db: Database, table: string) =>
  // deno-lint-ignore no-explicit-any
  (await db.get(table).query().fetch()).map((r: any) => r._raw).sort((a, b) => a.id.localeCompare(b.id))

test('WatermelonDB: two devices edit offline, sync and converge; a conflict is refused, then pulled and pushed', async () => {
  const me = await createUser()
  const [phone, laptop] = [device(), device()]
  await sync(phone, me)
  await sync(laptop, me)

  // The phone writes offline: a notebook and an entry in it.
  let entryId = ''
  await phone.write(async () => {
    const nb = await phone.get('notebooks').create((r) => {
      Object.assign(r._raw, { user_id: me.id, name: 'Trips', metadata_visibility: 'user', content_visibility: 'user' })
    })
    const e = await phone.get('journal_entries').create((r) => {
      Object.assign(r._raw, {
        user_id: me.id, notebook_id: nb.id, title: 'Train', content: 'first draft', tags: '["travel"]',
        metadata_visibility: 'user', content_visibility: 'user', mood: 'calm',
      })
    })
    entryId = e.id
  })
  await sync(phone, me)
  const [row] = await sql`select e.title, c.content, e.tags from public.journal_entries e
                           join public.journal_entry_contents c on c.entry_id = e.id where e.id = ${entryId}`
  assert.deepEqual({ ...row }, { title: 'Train', content: 'first draft', tags: ['travel'] })
  await sync(laptop, me)
  assert.equal((await raws(laptop, 'journal_entries'))[0]?.content, 'first draft')

  // Both edit the same entry offline; the phone pushes between the laptop's pull and push.
  const edit = (db: Database, fields: Record<string, string>) =>
    db.write(async () => {
      const e = await db.get('journal_entries').find(entryId)
      // _setRaw records the change in _changed, as a model's @field setters do.
      await e.update((r) => Object.entries(fields).forEach(([k, v]) => r._setRaw(k, v)))
    })
  await edit(phone, { title: 'Train to Lyon' })
  await edit(laptop, { content: 'second draft' })
  await assert.rejects(sync(laptop, me, () => sync(phone, me)), /push: 409/)
  await sync(laptop, me) // pull (the phone's title, the laptop's text kept), then push
  await sync(phone, me)
  const [a, b] = [await raws(phone, 'journal_entries'), await raws(laptop, 'journal_entries')]
  const shape = (r: Record<string, unknown>) => ({ title: r.title, content: r.content, tags: r.tags })
  assert.deepEqual(a.map(shape), [{ title: 'Train to Lyon', content: 'second draft', tags: '["travel"]' }])
  assert.deepEqual(b.map(shape), a.map(shape), 'both devices converge, nothing lost')
  assert.equal(a[0]._status, 'synced')

  // A deletion on one device reaches the other.
  await laptop.write(async () => {
    const e = await laptop.get('journal_entries').find(entryId)
    await e.markAsDeleted()
  })
  await sync(laptop, me)
  await sync(phone, me)
  assert.deepEqual(await raws(phone, 'journal_entries'), [])
  assert.equal((await sql`select count(*)::int as n from public.journal_entries where user_id = ${me.id}`)[0].n, 0)
  assert.equal((await raws(phone, 'notebooks')).length, 1)
})
