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

-- Realtime Authorization's table and topic function, with hosted's columns, grants and RLS
-- (Realtime's own tenant migrations; hosted partitions the table by day, a plain table here).
-- A private channel may read or send what the project's policies on it allow; the project's
-- policies are migrations (supabase/schemas/realtime.sql).
create schema if not exists realtime;
grant usage on schema realtime to postgres, anon, authenticated, service_role;
create table if not exists realtime.messages (
  topic text not null,
  extension text not null,
  payload jsonb,
  event text,
  private boolean default false,
  updated_at timestamp without time zone not null default now(),
  inserted_at timestamp without time zone not null default now(),
  id uuid not null default gen_random_uuid(),
  primary key (id, inserted_at)
);
create index if not exists messages_inserted_at_topic_index on realtime.messages (inserted_at desc, topic);
alter table realtime.messages enable row level security;
grant select, insert, update on realtime.messages to postgres, anon, authenticated, service_role;
create or replace function realtime.topic() returns text
  language sql stable
  as $$ select nullif(current_setting('realtime.topic', true), '')::text $$;
