-- The Supabase CLI's record of applied migrations; the local stack and `supabase db push`
-- share it, so both agree on what is applied.
create schema if not exists supabase_migrations;
create table if not exists supabase_migrations.schema_migrations (
  version text primary key,
  statements text[],
  name text
);
