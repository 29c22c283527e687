// Notebooks (SPEC "Notebook"): entries whose level is user inherit a notebook's levels.
import { z } from '@hono/zod-openapi'
import { refuseWrite } from '../../_shared/access.ts'
import type { Db } from '../../_shared/db.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { ifMatchOf, ifStillCurrent, sendETag } from '../../_shared/etag.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { clientChosenId, idParams } from '../../_shared/validation.ts'
import { insertOnce } from '../../_shared/create_once.ts'
import { requireSharingTargets, sharingFields, VISIBILITY_LEVELS } from '../../_shared/visibility.ts'
import { endpoint, Message, NextCursor, routeModule } from '../openapi.ts'

const COLUMNS =
  'id, user_id, name, metadata_visibility, content_visibility, team_id, org_id, created_at, updated_at, row_version'

const name = z.string().trim().min(1).max(200)
const NewNotebook = z.object({ name, ...sharingFields, id: clientChosenId() }).strict().superRefine(requireSharingTargets)
const NotebookPatch = z.object({ name: name.optional(), ...sharingFields }).strict().superRefine(
  requireSharingTargets,
)
const ListQuery = z.object(pageQuery).strict()

const Notebook = z.object({
  id: z.string(),
  user_id: z.string(),
  name: z.string(),
  metadata_visibility: z.enum(VISIBILITY_LEVELS),
  content_visibility: z.enum(VISIBILITY_LEVELS),
  team_id: z.string().nullable(),
  org_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  row_version: z.string().describe(
    "The notebook's version (its ETag): changes with every write of the notebook; send it as If-Match to write only over what was read",
  ),
}).openapi('Notebook')

const tag = 'Notebooks'
const notebookId = idParams('id')
const versioned = { field: 'notebook', schema: Notebook }

/** A notebook the caller may see, or null. */
const readNotebook = async (db: Db, id: string) =>
  unwrap(await db.from('notebooks').select(COLUMNS).eq('id', id).maybeSingle())

export const notebookRoutes = routeModule()
  .openapi(
    endpoint({
      method: 'get',
      path: '/notebooks',
      tag,
      auth: 'bearer',
      query: ListQuery,
      summary: "The caller's notebooks",
      response: z.object({ notebooks: z.array(Notebook), next_cursor: NextCursor }),
    }),
    async (c) => {
      const query = c.var.db.from('notebooks').select(COLUMNS).eq('user_id', c.var.caller.id)
      const { items, next_cursor } = await newestFirstPage(query, c.req.valid('query'))
      return c.json({ notebooks: items, next_cursor })
    },
  )
  .openapi(
    endpoint({
      method: 'get',
      path: '/notebooks/{id}',
      tag,
      auth: 'bearer',
      params: notebookId,
      response: Notebook,
      summary: 'A notebook',
      versioned,
    }),
    async (c) => {
      const notebook = await readNotebook(c.var.db, c.req.valid('param').id)
      if (!notebook) throw notFound('Notebook not found')
      return c.json(sendETag(c, notebook))
    },
  )
  .openapi(
    endpoint({
      method: 'post',
      path: '/notebooks',
      tag,
      auth: 'bearer',
      body: NewNotebook,
      status: 201,
      response: Notebook,
      replayable: true,
      summary: 'Create a notebook',
      versioned,
    }),
    async (c) => {
      const { row, made } = await insertOnce(c.var.db, 'notebooks', c.req.valid('json'), COLUMNS)
      return c.json(sendETag(c, row as typeof row & { row_version: unknown }), made ? 201 : 200)
    },
  )
  .openapi(
    endpoint({
      method: 'put',
      path: '/notebooks/{id}',
      tag,
      auth: 'bearer',
      params: notebookId,
      body: NotebookPatch,
      response: Notebook,
      errors: [403],
      summary: 'Change a notebook; inheriting entries follow at once',
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const patch = c.req.valid('json')
      const ifMatch = ifMatchOf(c.req.header('if-match'))
      if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
      const rows = unwrap(
        await ifStillCurrent(
          c.var.db.from('notebooks').update(patch).eq('id', id).select(COLUMNS),
          ifMatch,
          'notebook',
          () => readNotebook(c.var.db, id),
        ),
      )
      if (!rows.length) await refuseWrite(c.var.db, 'notebooks', { id }, 'notebook')
      return c.json(sendETag(c, rows[0]))
    },
  )
  .openapi(
    endpoint({
      method: 'delete',
      path: '/notebooks/{id}',
      tag,
      auth: 'bearer',
      params: notebookId,
      response: Message,
      errors: [403],
      summary: 'Delete a notebook (its entries are kept)',
      versioned,
    }),
    async (c) => {
      const { id } = c.req.valid('param')
      const ifMatch = ifMatchOf(c.req.header('if-match'))
      const rows = unwrap(
        await ifStillCurrent(
          c.var.db.from('notebooks').delete().eq('id', id).select('id'),
          ifMatch,
          'notebook',
          () => readNotebook(c.var.db, id),
        ),
      )
      if (!rows.length) await refuseWrite(c.var.db, 'notebooks', { id }, 'notebook')
      return c.json({ message: 'Notebook deleted; its entries are kept' })
    },
  )
