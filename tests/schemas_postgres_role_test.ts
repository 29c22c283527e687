// Migrations run as hosted's postgres role, which is not a superuser (issue 35): a statement
// only a superuser may run must fail here as at `supabase db push`, and what hosted lets
// postgres do through supautils (an event trigger) must still work.
import { strict as assert } from 'node:assert'
import { buildDatabase } from '../scripts/lib/schemas.ts'
import { sql } from './_helpers.ts'

/** A throw-away database built from sql/local and the given migration texts; its error, if any. */
async function migrationError(...texts: string[]): Promise<string | null> {
  const dir = await Deno.makeTempDir({ prefix: 'journal-role-migrations-' })
  const files = texts.map((t, i) => `${dir}/2026010100000${i}_m${i}.sql`)
  await Promise.all(files.map((f, i) => Deno.writeTextFile(f, texts[i])))
  try {
    const db = await buildDatabase({ kind: 'migrations', files }, 'postgres-role')
    await db.stop()
    return null
  } catch (e) {
    return (e as Error).message
  } finally {
    await Deno.remove(dir, { recursive: true })
  }
}

Deno.test('schemas: the stack connects as a postgres with hosted attributes and memberships, no superuser', async () => {
  const [role] = await sql`
    select r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls, r.rolcanlogin,
           array(select m.roleid::regrole::text from pg_auth_members m where m.member = r.oid order by 1) as member_of
      from pg_roles r where r.rolname = current_user`
  assert.deepEqual(
    { ...role, member_of: [...role.member_of] },
    {
      rolsuper: false, rolcreaterole: true, rolcreatedb: true, rolreplication: true, rolbypassrls: true, rolcanlogin: true,
      member_of: ['anon', 'authenticated', 'pg_monitor', 'pg_read_all_data', 'pg_signal_backend', 'service_role'],
    },
  )
  const [admin] = await sql`select rolsuper from pg_roles where rolname = 'supabase_admin'`
  assert.equal(admin?.rolsuper, true, 'the bootstrap superuser is supabase_admin, as on hosted')
})

Deno.test({
  name: 'schemas: a superuser-only statement in a migration fails; an event trigger (supautils) does not',
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const refused = await migrationError(`copy (select 1) to program 'true';`)
    assert.match(refused ?? 'it was applied', /must be superuser or have privileges of the pg_execute_server_program role/)
    assert.match(await migrationError(`alter role postgres superuser;`) ?? 'it was applied', /must be superuser/)

    const allowed = await migrationError(
      `create function public.note_ddl() returns event_trigger language plpgsql as $$ begin end $$;
       create event trigger note_ddl on ddl_command_end execute function public.note_ddl();
       create table public.after_the_trigger (id int);`,
      `create extension if not exists pg_cron with schema pg_catalog;
       create extension if not exists pg_trgm with schema extensions;`,
    )
    assert.equal(allowed, null)
  },
})
