// Notebooks (SPEC "Notebook"): entries whose level is user inherit a notebook's levels.
import { Hono } from 'hono'
import { z } from 'zod'
import { refuseWrite } from '../../_shared/access.ts'
import { badRequest, notFound, unwrap } from '../../_shared/errors.ts'
import { newestFirstPage, pageQuery } from '../../_shared/pagination.ts'
import { pathUuid, readJson, readQuery } from '../../_shared/validation.ts'
import { requireSharingTargets, sharingFields } from '../../_shared/visibility.ts'
import { type ApiEnv, bearer } from '../credentials.ts'

const COLUMNS = 'id, user_id, name, metadata_visibility, content_visibility, team_id, org_id, created_at, updated_at'

const name = z.string({ required_error: 'name is required', invalid_type_error: 'name must be a string' })
  .trim().min(1, 'name must not be empty').max(200, 'name must be at most 200 characters')

const NewNotebook = z.object({ name, ...sharingFields }).strict().superRefine(requireSharingTargets)
const NotebookPatch = z.object({ name: name.optional(), ...sharingFields }).strict().superRefine(requireSharingTargets)
const ListQuery = z.object(pageQuery).strict()


export const notebookRoutes = new Hono<ApiEnv>()
  .get('/notebooks', bearer, async (c) => {
    const q = readQuery(c, ListQuery)
    const query = c.var.db.from('notebooks').select(COLUMNS).eq('user_id', c.var.caller.id)
    const { items, next_cursor } = await newestFirstPage(query, q)
    return c.json({ notebooks: items, next_cursor })
  })
  .get('/notebooks/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const notebook = unwrap(await c.var.db.from('notebooks').select(COLUMNS).eq('id', id).maybeSingle())
    if (!notebook) throw notFound('Notebook not found')
    return c.json(notebook)
  })
  .post('/notebooks', bearer, async (c) => {
    const body = await readJson(c, NewNotebook)
    return c.json(unwrap(await c.var.db.from('notebooks').insert(body).select(COLUMNS).single()), 201)
  })
  .put('/notebooks/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const patch = await readJson(c, NotebookPatch)
    if (Object.keys(patch).length === 0) throw badRequest('Nothing to update')
    const rows = unwrap(await c.var.db.from('notebooks').update(patch).eq('id', id).select(COLUMNS))
    if (!rows.length) await refuseWrite(c.var.db, 'notebooks', { id }, 'notebook')
    return c.json(rows[0])
  })
  .delete('/notebooks/:id', bearer, async (c) => {
    const id = pathUuid(c)
    const rows = unwrap(await c.var.db.from('notebooks').delete().eq('id', id).select('id'))
    if (!rows.length) await refuseWrite(c.var.db, 'notebooks', { id }, 'notebook')
    return c.json({ message: 'Notebook deleted; its entries are kept' })
  })
