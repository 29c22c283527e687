-- Local stand-in for Supabase Storage's schema. The gateway's object store keeps the files
-- on disk and the rows here, writing them as the caller so storage policies apply.
create schema if not exists storage;
grant usage on schema storage to anon, authenticated, service_role;

create table if not exists storage.buckets (
  id text primary key,
  name text not null unique,
  owner uuid,
  owner_id text,
  public boolean default false,
  avif_autodetection boolean default false,
  file_size_limit bigint,
  allowed_mime_types text[],
  created_at timestamptz default now(),
  updated_at timestamptz default now()
);

create table if not exists storage.objects (
  id uuid primary key default gen_random_uuid(),
  bucket_id text references storage.buckets (id),
  name text,
  owner uuid,
  owner_id text,
  metadata jsonb,
  user_metadata jsonb,
  path_tokens text[] generated always as (string_to_array(name, '/')) stored,
  version text,
  created_at timestamptz default now(),
  updated_at timestamptz default now(),
  last_accessed_at timestamptz default now(),
  unique (bucket_id, name)
);
-- A cluster made before: as Supabase's columns (supabase/tests/_hosted_platform.sql checks them).
do $$
begin
  if to_regtype('storage.buckettype') is null then
    create type storage.buckettype as enum ('STANDARD', 'ANALYTICS', 'VECTOR');
  end if;
end
$$;
alter table storage.buckets
  alter column public drop not null,
  add column if not exists type storage.buckettype not null default 'STANDARD',
  add column if not exists versioning_status text not null default 'DISABLED'
    constraint buckets_versioning_status_check check (versioning_status = any (array['DISABLED', 'ENABLED', 'SUSPENDED']))
    constraint buckets_versioning_dark_check check (versioning_status = 'DISABLED');
alter table storage.objects
  add column if not exists archived_at timestamptz,
  add column if not exists is_delete_marker boolean not null default false,
  add column if not exists is_versioned boolean not null default false;

-- Storage refuses a DELETE it did not run itself (migrations/tenant/0055-prevent-direct-deletes.sql,
-- verbatim): its own queries set storage.allow_delete_query, as the local store's do
-- (scripts/lib/storage/caller.ts). Remove objects through the Storage API, never by deleting rows.
create or replace function storage.protect_delete()
returns trigger
language plpgsql
as $$
begin
    if coalesce(current_setting('storage.allow_delete_query', true), 'false') != 'true' then
        raise exception 'Direct deletion from storage tables is not allowed. Use the Storage API instead.'
            using hint = 'This prevents accidental data loss from orphaned objects.',
                  errcode = '42501';
    end if;
    return null;
end;
$$;
drop trigger if exists protect_buckets_delete on storage.buckets;
create trigger protect_buckets_delete
    before delete on storage.buckets
    for each statement
    execute function storage.protect_delete();
drop trigger if exists protect_objects_delete on storage.objects;
create trigger protect_objects_delete
    before delete on storage.objects
    for each statement
    execute function storage.protect_delete();

alter table storage.buckets enable row level security;
alter table storage.objects enable row level security;
grant all on storage.buckets, storage.objects to anon, authenticated, service_role;

create or replace function storage.foldername(name text) returns text[]
language plpgsql immutable
as $$
declare _parts text[];
begin
  select string_to_array(name, '/') into _parts;
  return _parts[1:array_length(_parts, 1) - 1];
end
$$;

create or replace function storage.filename(name text) returns text
language plpgsql immutable
as $$
declare _parts text[];
begin
  select string_to_array(name, '/') into _parts;
  return _parts[array_length(_parts, 1)];
end
$$;

create or replace function storage.extension(name text) returns text
language plpgsql immutable
as $$
declare _parts text[];
begin
  select string_to_array(storage.filename(name), '.') into _parts;
  if array_length(_parts, 1) < 2 then return ''; end if;
  return _parts[array_length(_parts, 1)];
end
$$;
