// GET /api/user/export: everything the system holds about the caller (docs/user_data.md), as a
// ZIP (export.json, the caller's media under media/, README.txt) or as the JSON document alone.
// Both are streamed as they are produced: every large section is read in keyset pages and
// written before the next page is read, media objects are piped from Storage into the archive,
// so memory stays flat whatever the user's history (scripts/bench/user_export.ts measures it).
//
// Every section is read as the caller (c.var.db: RLS decides) and filtered to the caller's own
// rows, so another user's rows the caller may read (a teammate's shared entry) never appear;
// the rows only super admins may read that are about the caller come from
// export_own_hidden_rows (supabase/schemas/user_data/export.sql), which returns only the
// caller's.
import { z } from '@hono/zod-openapi'
import { configure, TextReader, ZipWriter } from '@zip.js/zip.js'
import type { Db } from '../../../_shared/db.ts'
import { unwrap } from '../../../_shared/errors.ts'
import { publicObjectUrl } from '../../../_shared/storage.ts'
import { endpoint, routeModule } from '../../openapi.ts'
import { exportDocument } from './document.ts'
import type { Media } from './readers.ts'
import { EXPORT_FORMAT, ExportDocument } from './schema.ts'

configure({ useWebWorkers: false })

// ---- The archive.

const README = (media: Media[], missing: Set<string>) => {
  const kinds: Record<Media['kind'], string> = {
    entry_background: 'the generated background of a journal entry (export.json: entries[].background_path)',
    checkin_photo: 'the photo of a workout check-in (export.json: workout.checkins[].photo_path)',
    pack_image: 'an image of a tone pack you made (export.json: tone_packs.owned[].images[].path)',
    avatar: 'an avatar image you uploaded (export.json: avatars)',
  }
  const lines = [
    'Your data, exported from the journal app',
    '',
    'export.json   Everything the app holds about you, as one JSON document (format ' +
    EXPORT_FORMAT + '):',
    '              your profile and preferences; notebooks and journal entries with their text,',
    '              visibility, mood, tags and linked track; goals and check-ins; organization and team',
    '              memberships with your role; the drops ledger and purchases; tone packs you made,',
    '              bought or were given; encouragement drops you sent and received (senders as the app',
    '              shows them to you), badges and milestones; workout windows, location, check-ins and',
    '              chains; listening history; AI usage with its cost; notifications; e-mails sent for',
    '              you; labs experiments, clones, replications, submissions and messages; and the support',
    '              sessions in which an administrator acted as you. Its schema is the UserExport',
    '              component of the API document (/functions/v1/api/openapi.json).',
    'README.txt    This file.',
    'media/        Files you own, at media/<bucket>/<object name>; export.json points to each by its path.',
    '',
  ]
  if (media.length) lines.push('The files under media/:')
  for (const m of media) {
    lines.push(
      `${m.path}\n    ${kinds[m.kind]}${missing.has(m.path) ? ' (no longer in storage: not included)' : ''}`,
    )
  }
  return lines.join('\n') + '\n'
}

/** The document as a byte stream, pulled as the reader reads. */
function documentStream(
  db: Db,
  me: { id: string; email: string | null },
  media: Media[],
) {
  const encoder = new TextEncoder()
  const pieces = exportDocument(db, me, media)
  // Small pieces are gathered into chunks of about 64 kB before they are handed on.
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk = ''
      while (chunk.length < 65536) {
        const { value, done } = await pieces.next()
        if (done) {
          if (chunk) controller.enqueue(encoder.encode(chunk))
          controller.close()
          return
        }
        chunk += value
      }
      controller.enqueue(encoder.encode(chunk))
    },
    async cancel() {
      await pieces.return(undefined)
    },
  }, { highWaterMark: 0 })
}

function zipStream(db: Db, me: { id: string; email: string | null }) {
  const media: Media[] = []
  const missing = new Set<string>()
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>()
  const zip = new ZipWriter(writable, { bufferedWrite: false })
  ;(async () => {
    await zip.add('export.json', documentStream(db, me, media), { level: 6 })
    for (const m of media) {
      const res = await fetch(publicObjectUrl(m.bucket, m.object))
      if (!res.ok || !res.body) {
        await res.body?.cancel()
        missing.add(m.path)
        continue
      }
      // Images are compressed already: stored as they are.
      await zip.add(m.path, res.body, { level: 0 })
    }
    await zip.add('README.txt', new TextReader(README(media, missing)))
    await zip.close()
  })().catch(async (e) => {
    console.error('user export failed while streaming', e)
    await writable.abort(e).catch(() => {})
  })
  return readable
}

const tag = 'Profile'

// The archive is sent as application/octet-stream, not application/zip: supabase-js's
// functions.invoke reads only application/octet-stream and application/pdf as a Blob and
// anything else it does not know as text, which corrupts a ZIP. Content-Disposition names
// the file (.zip), which is what browsers and download tools go by.
const ZIP_TYPE = 'application/octet-stream'

export const userDataRoutes = routeModule()
  .openapi(
    (() => {
      const route = endpoint({
        method: 'get',
        path: '/user/export',
        tag,
        auth: 'bearer',
        errors: [403],
        query: z.object({
          format: z.enum(['zip', 'json']).default('zip')
            .openapi({
              description: 'zip: the archive (export.json, media/, README.txt); json: export.json alone',
            }),
        }).strict(),
        summary: 'Everything the app holds about the caller, as a ZIP or as JSON',
        description:
          'Streamed as it is produced. The ZIP holds export.json (this document), the media files the ' +
          'caller owns (entry backgrounds, check-in photos, pack images, avatars) under media/, and README.txt. Another ' +
          "user's rows never appear, even where the caller may read them (a teammate's shared entry). " +
          "403 inside an impersonation session: the export is the user's own copy.",
        response: ExportDocument,
        responseDescription: 'The ZIP by default (application/octet-stream, Content-Disposition: attachment; ' +
          'filename="export-<date>.zip"); with format=json the document alone',
      })
      const ok = route.responses[200] as { content: Record<string, unknown> }
      ok.content = {
        [ZIP_TYPE]: { schema: { type: 'string', format: 'binary', contentMediaType: 'application/zip' } },
        ...ok.content,
      }
      return route
    })(),
    async (c) => {
      const { format } = c.req.valid('query')
      const me = { id: c.var.caller.id, email: c.var.caller.email }
      // Refused before anything is sent: inside an impersonation session (403), or when the
      // caller cannot be read (a 4xx/5xx with {error}).
      unwrap(await c.var.db.rpc('refuse_while_impersonating', { action: 'exporting the account' }))
      unwrap(
        await c.var.db.from('profiles').select('id').eq('id', me.id).single(),
      )
      const day = new Date().toISOString().slice(0, 10)
      if (format === 'json') {
        return new Response(documentStream(c.var.db, me, []), {
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'content-disposition': `attachment; filename="export-${day}.json"`,
            'cache-control': 'no-store',
          },
        }) as any
      }
      return new Response(zipStream(c.var.db, me), {
        headers: {
          'content-type': ZIP_TYPE,
          'content-disposition': `attachment; filename="export-${day}.zip"`,
          'cache-control': 'no-store',
        },
      }) as any
    },
  )
