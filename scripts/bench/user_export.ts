// GET /api/user/export for a large user: 50,000 journal entries (each with ~300 characters of
// text) and media stored as entry backgrounds (default 1 GB: 256 objects of 4 MB of random,
// incompressible bytes). The export is read to the end by this process without keeping it;
// figures: time to the first byte and to the last, the archive's size, and the RSS of the
// gateway process (which serves /functions/v1 and /storage/v1) sampled every 20 ms during the
// export, against its RSS just before (the baseline). The target is flat memory: peak minus
// baseline well under the archive's size. The JSON form (no media) is measured the same way;
// each form twice in a row.
// Knobs: BENCH_EXPORT_ENTRIES (50000), BENCH_EXPORT_MEDIA_MB (1024), BENCH_EXPORT_OBJECT_MB (4).
import postgres from 'postgres'
import type { Stack } from '../lib/stack.ts'
import { mintUserToken } from '../lib/tokens.ts'
import { type BenchModule, knob } from './_module.ts'

const MB = 1024 * 1024

function rssOf(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`)
  return Number(status.match(/VmRSS:\s+(\d+) kB/)![1]) * 1024
}

/** Reads a reply to its end, counting bytes; samples the process's RSS meanwhile. */
async function measured(pid: number, url: string, token: string) {
  const baseline = rssOf(pid)
  let peak = baseline
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(pid))
  }, 20)
  const t0 = performance.now()
  let firstByte = 0
  let bytes = 0
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`)
    const reader = res.body!.getReader()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      if (!firstByte) firstByte = performance.now() - t0
      bytes += value.length
    }
  } finally {
    clearInterval(sampler)
  }
  peak = Math.max(peak, rssOf(pid))
  return { ms: performance.now() - t0, firstByte, bytes, baseline, peak }
}

const mb = (n: number) => `${(n / MB).toFixed(1)} MB`

export async function benchUserExport(
  stack: Stack,
  o: { entries: number; mediaMb: number; objectMb: number },
) {
  const pid = stack.pids()['the gateway']
  if (!pid) throw new Error('no gateway pid')
  const sql = postgres(stack.dbUrl, { max: 2, onnotice: () => {} })
  const email = `bench-export-${crypto.randomUUID().slice(0, 8)}@bench.local`
  await sql`select private.new_auth_user(jsonb_build_object('email', ${email}::text))`
  const { userId, token } = await mintUserToken(sql, email, {
    secret: stack.jwtSecret,
    expiresInSeconds: 3600,
  })

  // The entries, in bulk with triggers off (as the other fixtures load).
  let t0 = performance.now()
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx`insert into public.journal_entries (user_id, title, mood, tags, meta_scope, content_scope, created_at, updated_at)
             select ${userId}, 'Entry ' || g, (array['joyful', 'calm', 'tired', 'hopeful'])[1 + g % 4], array['t' || (g % 50)],
                    'user', 'user', now() - make_interval(mins => g), now() - make_interval(mins => g)
               from generate_series(1, ${o.entries}::int) g`
    await tx`insert into public.journal_entry_contents (entry_id, user_id, content)
             select id, user_id, 'Text of ' || title || '. ' || repeat('Lorem ipsum dolor sit amet. ', 10)
               from public.journal_entries where user_id = ${userId}`
  })
  await sql`analyze public.journal_entries`
  console.log(
    `fixture: ${o.entries.toLocaleString('en')} entries in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  )

  // The media: entry backgrounds of the newest entries, stored through Storage.
  const objects = Math.round(o.mediaMb / o.objectMb)
  const size = o.objectMb * MB
  const targets = await sql`select id from public.journal_entries where user_id = ${userId}
                             order by created_at desc limit ${objects}`
  const bytes = new Uint8Array(size)
  for (let off = 0; off < size; off += 65536) {
    crypto.getRandomValues(bytes.subarray(off, Math.min(size, off + 65536)))
  }
  t0 = performance.now()
  for (const { id } of targets) {
    const name = `${userId}/${id}-bench.png`
    bytes[0] = (bytes[0] + 1) % 256 // no two objects alike
    const res = await fetch(`${stack.apiUrl}/storage/v1/object/entry-backgrounds/${name}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.serviceRoleKey}`,
        apikey: stack.serviceRoleKey,
        'content-type': 'image/png',
      },
      body: bytes,
    })
    if (!res.ok) throw new Error(`storing ${name}: ${res.status} ${await res.text()}`)
    await res.body?.cancel()
    await sql`update public.journal_entries set background_object = ${name},
                background_url = ${`${stack.apiUrl}/storage/v1/object/public/entry-backgrounds/${name}`} where id = ${id}`
  }
  console.log(
    `fixture: ${objects} media objects of ${o.objectMb} MB (${mb(objects * size)}) in ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s`,
  )
  await sql.end()

  // Warm-up: the route's modules loaded, once, with a small user.
  const small = await mintUserToken(
    postgres(stack.dbUrl, { max: 1, onnotice: () => {} }),
    'alice@example.com',
    {
      secret: stack.jwtSecret,
    },
  ).catch(() => null)
  if (small) await measured(pid, `${stack.apiUrl}/functions/v1/api/user/export`, small.token)

  const url = `${stack.apiUrl}/functions/v1/api/user/export`
  // Each form twice: the first run also shows the heap V8 grows once under a stream's garbage
  // (and keeps), the second what an export costs a process that has served one.
  const json = await measured(pid, `${url}?format=json`, token)
  const json2 = await measured(pid, `${url}?format=json`, token)
  const zip = await measured(pid, url, token)
  const zip2 = await measured(pid, url, token)
  const line = (label: string, r: Awaited<ReturnType<typeof measured>>) =>
    `${label}: ${mb(r.bytes)} in ${(r.ms / 1000).toFixed(1)} s (${
      (r.bytes / MB / (r.ms / 1000)).toFixed(0)
    } MB/s, ` +
    `first byte ${r.firstByte.toFixed(0)} ms) | gateway RSS baseline ${mb(r.baseline)}, peak ${
      mb(r.peak)
    }, ` +
    `peak - baseline ${mb(r.peak - r.baseline)} (${
      ((r.peak - r.baseline) / r.bytes * 100).toFixed(1)
    } % of the reply)`
  console.log(line(`JSON  (${o.entries.toLocaleString('en')} entries)`, json))
  console.log(line('JSON  again', json2))
  console.log(line(`ZIP   (+ ${objects} media objects)`, zip))
  console.log(line('ZIP   again', zip2))
}

export const bench: BenchModule = {
  name: 'user_export',
  run: (stack) =>
    benchUserExport(stack, {
      entries: knob('BENCH_EXPORT_ENTRIES', 50_000),
      mediaMb: knob('BENCH_EXPORT_MEDIA_MB', 1024),
      objectMb: knob('BENCH_EXPORT_OBJECT_MB', 4),
    }),
}
