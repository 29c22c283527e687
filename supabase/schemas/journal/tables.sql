-- =============================================================================================
-- Journal: notebooks, entries, their visibility and the feed
-- =============================================================================================
-- Notebooks and journal entries with two-level visibility (SPEC "Visibility rules").
--
-- Metadata (journal_entries) and content (journal_entry_contents) are separate tables, each
-- with its own policy, so content is protected at the storage level: a viewer who may see
-- the metadata but not the content reads content = null through the security_invoker view
-- journal_entry_details, from PostgREST as from /api/journal.
--
-- Each row stores its *effective* scope (meta_scope/meta_scope_id, content_scope/
-- content_scope_id): the entry's own level when it is team, org or public, otherwise its
-- notebook's (rule 5), otherwise user. Triggers keep them current in the same transaction
-- (a notebook change re-derives its inheriting entries at once), and the policies match
-- them against the caller's memberships, each branch served by its own index.
--
-- A row names only a team or organization its owner belongs to: checked on every write, and
-- a removal from the group takes the member's rows out of it in the same transaction. A
-- per-user advisory lock, the journal gate, keeps a member's writes and their removal apart.
--
-- The area is split by topic, loaded in this order (supabase/config.toml, schema_paths):
-- tables, visibility, entries, feed, mentions. This file: the levels, tags and the tables.

-- ---------------------------------------------------------------------------------------------
-- Levels and tags
-- ---------------------------------------------------------------------------------------------

-- The visibility levels an entry or notebook may have.
create or replace function private.valid_visibility(level text) returns boolean
language sql immutable
set search_path = ''
as $$ select level in ('user', 'team', 'org', 'public') $$;
grant execute on function private.valid_visibility(text) to authenticated, service_role;
-- The scope a level resolves to: (level, the team or org it names).
create or replace function private.scope_of(level text, team uuid, org uuid) returns uuid
language sql immutable
set search_path = ''
as $$ select case level when 'team' then team when 'org' then org end $$;
grant execute on function private.scope_of(text, uuid, uuid) to authenticated, service_role;

-- Tags: at most 20, each 1 to 50 characters.
create or replace function private.valid_tags(tags text[]) returns boolean
language sql immutable
set search_path = ''
as $$
  select coalesce(cardinality(tags), 0) <= 20
     and not exists (select 1 from unnest(tags) t where t is null or char_length(t) not between 1 and 50)
$$;
grant execute on function private.valid_tags(text[]) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Tables
-- ---------------------------------------------------------------------------------------------

-- team_id and org_id carry no foreign key: removing a member from the group, not deleting
-- the group, is what clears them (private.unshare_on_leaving_team and _org below).
create table public.notebooks (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  name text not null check (char_length(btrim(name)) between 1 and 200),
  metadata_visibility text not null default 'user' check (private.valid_visibility(metadata_visibility)),
  content_visibility text not null default 'user' check (private.valid_visibility(content_visibility)),
  team_id uuid,
  org_id uuid,
  meta_scope_id uuid generated always as (private.scope_of(metadata_visibility, team_id, org_id)) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  row_version xid8 not null default pg_current_xact_id(),
  created_version xid8 not null default pg_current_xact_id(),
  constraint notebooks_team_id_required check (team_id is not null or 'team' not in (metadata_visibility, content_visibility)),
  constraint notebooks_org_id_required check (org_id is not null or 'org' not in (metadata_visibility, content_visibility))
);
alter table public.notebooks enable row level security;
--   drop constraint notebooks_team_id_fkey,
--   drop constraint notebooks_org_id_fkey;
comment on table public.notebooks is
  'Groups of entries; entries whose level is user inherit the notebook''s levels (with its team/org).';
comment on column public.notebooks.team_id is
  'The team the levels name; only one its owner belongs to (as journal_entries.team_id).';
comment on column public.notebooks.org_id is
  'The organization the levels name; only one its owner belongs to (as journal_entries.team_id).';
revoke all on public.notebooks from anon, authenticated;
grant select, delete on public.notebooks to authenticated;
grant insert (id, name, metadata_visibility, content_visibility, team_id, org_id), update (name, metadata_visibility, content_visibility, team_id, org_id)
  on public.notebooks to authenticated;
grant select (id, user_id, name, metadata_visibility, content_visibility, team_id, org_id, created_at, updated_at, row_version, created_version)
  on public.notebooks to anon;
create index notebooks_by_owner on public.notebooks (user_id, created_at desc);
-- A create repeated with its client-chosen id (conventions.sql): a retry, or a conflict.
create trigger notebooks_reused_id before insert on public.notebooks
  for each row execute function private.refuse_reused_id('name', 'metadata_visibility', 'content_visibility', 'team_id', 'org_id');
-- A removal finds the member's rows in the group by these.
create index notebooks_team_membership on public.notebooks (team_id, user_id);
create index notebooks_org_membership on public.notebooks (org_id, user_id);
-- A device's pull (sync.sql) reads its owner's changes at or above its cursor.
create index notebooks_sync on public.notebooks (user_id, row_version);

-- Entry metadata. team_id and org_id as in notebooks.
create table public.journal_entries (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  notebook_id uuid references public.notebooks (id) on delete set null,
  title text not null check (char_length(title) between 1 and 200),
  mood text check (char_length(mood) between 1 and 50),
  tags text[] not null default '{}' check (private.valid_tags(tags)),
  metadata_visibility text not null default 'user' check (private.valid_visibility(metadata_visibility)),
  content_visibility text not null default 'user' check (private.valid_visibility(content_visibility)),
  team_id uuid,
  org_id uuid,
  music_track_id text check (char_length(music_track_id) <= 100),
  meta_scope text not null default 'user',
  meta_scope_id uuid,
  content_scope text not null default 'user',
  content_scope_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  background_url text check (char_length(background_url) <= 2048),
  background_object text check (char_length(background_object) <= 512),
  mood_detected boolean not null default false,
  row_version xid8 not null default pg_current_xact_id(),
  created_version xid8 not null default pg_current_xact_id(),
  constraint journal_entries_team_id_required check (team_id is not null or 'team' not in (metadata_visibility, content_visibility)),
  constraint journal_entries_org_id_required check (org_id is not null or 'org' not in (metadata_visibility, content_visibility))
);
alter table public.journal_entries enable row level security;
--   add column background_url text check (char_length(background_url) <= 2048),
--   add column background_object text check (char_length(background_object) <= 512);
--   drop constraint journal_entries_team_id_fkey,
--   drop constraint journal_entries_org_id_fkey;
comment on table public.journal_entries is
  'Entry metadata (title, mood, tags, dates). The text is in journal_entry_contents, behind its own policy.';
comment on column public.journal_entries.meta_scope is
  'Effective metadata level after notebook inheritance (derived by trigger; clients cannot write it).';
comment on column public.journal_entries.music_track_id is 'Provider id of the track last played at or before created_at.';
comment on column public.journal_entries.background_url is
  'Public URL of the entry''s generated background image; set only through set_entry_background.';
comment on column public.journal_entries.background_object is
  'Storage object name behind background_url (bucket entry-backgrounds), so a replaced image can be deleted.';
comment on column public.journal_entries.row_version is
  'The transaction that last changed the entry or its text: the sync cursor and the ETag (sync.sql). Every synced table has it, with created_version.';
comment on column public.journal_entries.mood_detected is
  'True while the mood is the one tone analysis set; any other change of mood makes it false. Not client-writable.';
comment on column public.journal_entries.team_id is
  'The team the levels name; only one its owner belongs to (private.check_owner_membership on write, private.unshare_on_leaving_team and _org on removal).';
comment on column public.journal_entries.org_id is
  'The organization the levels name; only one its owner belongs to (as team_id).';
revoke all on public.journal_entries from anon, authenticated;
grant select, delete on public.journal_entries to authenticated;
grant insert (id, notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id), update (notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id)
  on public.journal_entries to authenticated;
grant select (id, user_id, notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id, music_track_id, meta_scope, content_scope, created_at, updated_at, background_url, background_object, mood_detected, row_version, created_version)
  on public.journal_entries to anon;
-- One index per branch of the visibility feed, each ordered newest first.
create index journal_entries_own on public.journal_entries (user_id, created_at desc, id desc);
create index journal_entries_team_scope on public.journal_entries (meta_scope_id, created_at desc, id desc)
  where meta_scope = 'team';
create index journal_entries_org_scope on public.journal_entries (meta_scope_id, created_at desc, id desc)
  where meta_scope = 'org';
create index journal_entries_public on public.journal_entries (created_at desc, id desc) where meta_scope = 'public';
-- The super admins' feed.
create index journal_entries_newest on public.journal_entries (created_at desc, id desc);
create index journal_entries_notebook on public.journal_entries (notebook_id);
create index journal_entries_team_membership on public.journal_entries (team_id, user_id);
create index journal_entries_org_membership on public.journal_entries (org_id, user_id);
-- A device's pull (sync.sql) reads its owner's changes at or above its cursor.
create index journal_entries_sync on public.journal_entries (user_id, row_version);

-- Entry text, one row per entry; its scopes are copied from the entry.
create table public.journal_entry_contents (
  entry_id uuid primary key references public.journal_entries (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  content text not null default '' check (char_length(content) <= 100000),
  content_scope text not null default 'user',
  content_scope_id uuid,
  meta_scope text not null default 'user',
  meta_scope_id uuid,
  mentions_indexed_at timestamptz
);
alter table public.journal_entry_contents enable row level security;
comment on table public.journal_entry_contents is
  'Entry text, readable only by those the effective content level admits and who may see the metadata (both scopes are copied from the entry).';
comment on column public.journal_entry_contents.mentions_indexed_at is
  'When the mentions of this text were indexed; null for text written before the index existed (see backfill_mentions).';
revoke all on public.journal_entry_contents from anon, authenticated;
grant select (entry_id, user_id, content, content_scope, meta_scope, mentions_indexed_at), insert (entry_id, content), update (content)
  on public.journal_entry_contents to authenticated;
grant select (entry_id, user_id, content, content_scope, meta_scope, mentions_indexed_at)
  on public.journal_entry_contents to anon;
create index journal_entry_contents_owner on public.journal_entry_contents (user_id);
