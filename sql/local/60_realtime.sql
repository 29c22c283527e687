-- Local stand-in for what Supabase Realtime needs in every project: the `supabase_realtime`
-- publication, created empty as on hosted (and by `supabase start`), so a migration that adds a
-- table to it behaves as there. The gateway's Realtime stand-in (scripts/lib/realtime/) reads
-- exactly the tables in it through logical replication.
do $$
begin
  if not exists (select 1 from pg_publication where pubname = 'supabase_realtime') then
    create publication supabase_realtime;
  end if;
end
$$;
