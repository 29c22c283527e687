// POST /object/list/<bucket>: the entries directly under a prefix, as Storage's storage.search
// returns them: objects, and folders as entries with id, dates and metadata null.
import { asCaller, type Claims } from './caller.ts'
import { json } from './errors.ts'
import { checkKey, checkSearch, intParam, likeEscape, type StorageContext } from './keys.ts'

const SORTABLE = ['name', 'updated_at', 'created_at', 'last_accessed_at']

export async function list(ctx: StorageContext, c: Claims, bucketId: string, body: any) {
  const dir = checkKey(typeof body?.prefix === 'string' ? body.prefix.replace(/^\/+|\/+$/g, '') : '', true)
  const prefix = dir ? `${dir}/` : ''
  const search = checkSearch(typeof body?.search === 'string' ? body.search : '')
  const column = SORTABLE.find((k) => k === body?.sortBy?.column) ?? 'name'
  const desc = String(body?.sortBy?.order).toLowerCase() === 'desc'
  const rows = await asCaller(ctx, c, (tx) =>
    tx`
    with under as (
      select substr(name, char_length(${prefix}) + 1) as rest, id, updated_at, created_at, last_accessed_at, metadata
      from storage.objects where bucket_id = ${bucketId} and starts_with(name, ${prefix})
    ), entries as (
      select distinct split_part(rest, '/', 1) as name, null::uuid as id, null::timestamptz as updated_at,
             null::timestamptz as created_at, null::timestamptz as last_accessed_at, null::jsonb as metadata
      from under where strpos(rest, '/') > 0
      union all
      select rest, id, updated_at, created_at, last_accessed_at, metadata from under where strpos(rest, '/') = 0
    )
    select * from entries
    where ${search ? tx`name ilike ${likeEscape(search) + '%'}` : tx`true`}
    order by ${column === 'name' ? tx`name collate "C"` : tx(column)} ${
      desc ? tx`desc` : tx`asc`
    }, name collate "C"
    limit ${intParam(body?.limit, 100)} offset ${intParam(body?.offset, 0)}`)
  return json(200, rows)
}
