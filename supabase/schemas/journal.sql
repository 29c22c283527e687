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
grant select (id, user_id, name, metadata_visibility, content_visibility, team_id, org_id, created_at, updated_at)
  on public.notebooks to anon;
create index notebooks_by_owner on public.notebooks (user_id, created_at desc);
-- A removal finds the member's rows in the group by these.
create index notebooks_team_membership on public.notebooks (team_id, user_id);
create index notebooks_org_membership on public.notebooks (org_id, user_id);

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
grant select (id, user_id, notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id, music_track_id, meta_scope, content_scope, created_at, updated_at, background_url, background_object, mood_detected)
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

-- ---------------------------------------------------------------------------------------------
-- The journal gate
-- ---------------------------------------------------------------------------------------------

-- One advisory lock per user. Every write statement a signed-in user makes on journal_entries,
-- journal_entry_contents or notebooks takes their gate shared before it touches a row (a
-- statement trigger), and holds it to the end of the transaction; removing that user from a
-- team or organization (removal, leaving, deleting the group) takes it exclusively before it
-- touches their rows. So the removal waits for the member's writes under way, and the
-- member's next writes wait for the removal: never both at once, so a write racing the
-- removal cannot keep the old scope, and text edits and removals cannot deadlock. Advisory
-- locks queue in arrival order, so a member who keeps writing cannot starve the removal.
-- Writers other than the owner (trusted sessions) take the owner's gate per row instead
-- (the prepare_* triggers below).
create or replace function private.hold_journal_gate(owner uuid, exclusive boolean) returns void
language plpgsql
set search_path = ''
as $$
begin
  if exclusive then
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('journal gate'), pg_catalog.hashtext(owner::text));
  else
    perform pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtext('journal gate'), pg_catalog.hashtext(owner::text));
  end if;
end
$$;
comment on function private.hold_journal_gate(uuid, boolean) is
  'Takes a user''s journal gate for the rest of the transaction: shared by their journal writes, exclusive by a removal from a team or organization.';
create or replace function private.gate_journal_statement() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
begin
  -- The caller's own statements; those our triggers run inside them (depth > 1) come after it.
  if uid is not null and pg_trigger_depth() = 1 then
    perform private.hold_journal_gate(uid, false);
  end if;
  return null;
end
$$;
comment on function private.gate_journal_statement() is
  'Before any row of a signed-in user''s write statement on the journal tables: takes their journal gate shared.';
create trigger journal_entries_gate before insert or update or delete on public.journal_entries
  for each statement execute function private.gate_journal_statement();
create trigger journal_entry_contents_gate before insert or update or delete on public.journal_entry_contents
  for each statement execute function private.gate_journal_statement();
create trigger notebooks_gate before insert or update or delete on public.notebooks
  for each statement execute function private.gate_journal_statement();

-- ---------------------------------------------------------------------------------------------
-- Derivation and validation
-- ---------------------------------------------------------------------------------------------

-- The write rules of an entry's and a notebook's fields (SPEC visibility 4 and the field
-- limits) with the field named in words, as /api says them, so a client writing the table
-- straight (PostgREST, an RPC) reads the same message. Raised by the BEFORE triggers below;
-- the check constraints stay as the last word.
create or replace function private.check_levels(metadata_visibility text, content_visibility text, team_id uuid, org_id uuid)
returns void
language plpgsql immutable
set search_path = ''
as $$
begin
  if not private.valid_visibility(check_levels.metadata_visibility) then
    raise exception 'metadata_visibility: must be one of user, team, org, public' using errcode = '23514';
  end if;
  if not private.valid_visibility(check_levels.content_visibility) then
    raise exception 'content_visibility: must be one of user, team, org, public' using errcode = '23514';
  end if;
  if check_levels.team_id is null and 'team' in (check_levels.metadata_visibility, check_levels.content_visibility) then
    raise exception 'team_id: required when a visibility is team' using errcode = '23514';
  end if;
  if check_levels.org_id is null and 'org' in (check_levels.metadata_visibility, check_levels.content_visibility) then
    raise exception 'org_id: required when a visibility is org' using errcode = '23514';
  end if;
end
$$;
comment on function private.check_levels(text, text, uuid, uuid) is
  'Refuses (23514, naming the field) a level outside the four values, and team/org without team_id/org_id.';
grant execute on function private.check_levels(text, text, uuid, uuid) to authenticated, service_role;


-- Who may share into a team or organization: its members (checked for the writer on every
-- change of a target or a level, so a former member cannot widen an old entry either).
create or replace function private.check_sharing_target(team uuid, org uuid, notebook uuid) returns void
language plpgsql stable security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
begin
  if uid is null then
    return; -- trusted direct sessions and the service role
  end if;
  if team is not null and not exists (select 1 from public.team_members where team_id = team and user_id = uid) then
    raise exception 'team_id: you are not a member of this team' using errcode = '22023';
  end if;
  if org is not null and not exists (select 1 from public.organization_members where org_id = org and user_id = uid) then
    raise exception 'org_id: you are not a member of this organization' using errcode = '22023';
  end if;
  if notebook is not null and not exists (select 1 from public.notebooks where id = notebook and user_id = uid) then
    raise exception 'notebook_id: no such notebook of yours' using errcode = '22023';
  end if;
end
$$;

-- What a foreign key would say: a row names only a team or organization its owner belongs to.
-- Checked for any writer (check_sharing_target checks the signed-in writer, with a friendlier
-- message); under the owner's gate, so no removal runs between the check and the commit.
create or replace function private.check_owner_membership(owner uuid, team uuid, org uuid) returns void
language plpgsql
set search_path = ''
as $$
begin
  if team is not null and not exists (select 1 from public.team_members m where m.team_id = team and m.user_id = owner) then
    raise exception 'team_id: the owner is not a member of this team' using errcode = '23503';
  end if;
  if org is not null and not exists (select 1 from public.organization_members m where m.org_id = org and m.user_id = owner) then
    raise exception 'org_id: the owner is not a member of this organization' using errcode = '23503';
  end if;
end
$$;
comment on function private.check_owner_membership(uuid, uuid, uuid) is
  'Refuses (23503) a team_id/org_id naming a group the row''s owner is not in, whoever writes.';

-- A team or organization the owner left (or that was deleted) drops the levels that named it
-- back to user (an entry also leaves its notebook, see prepare_journal_entry), so nothing
-- leaks and nothing is lost. Fired only by the cascade (depth > 1); a client's own write
-- without team_id/org_id fails the check constraint instead.
create or replace function private.orphan_safe_level(level text, team uuid, org uuid) returns text
language sql immutable
set search_path = ''
as $$
  select case when (level = 'team' and team is null) or (level = 'org' and org is null) then 'user' else level end
$$;
comment on function private.orphan_safe_level(text, uuid, uuid) is
  'A level naming a team/organization whose id was cleared (the owner left it, or it was deleted) falls back to user.';

-- Notebooks: the levels checked and the scope derived; the owner's gate for a writer other
-- than the owner.
create or replace function private.prepare_notebook() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if tg_op = 'UPDATE' and new.user_id is distinct from old.user_id then
    raise exception 'a notebook cannot change owner' using errcode = '42501';
  end if;
  if pg_trigger_depth() > 1 then
    new.metadata_visibility := private.orphan_safe_level(new.metadata_visibility, new.team_id, new.org_id);
    new.content_visibility := private.orphan_safe_level(new.content_visibility, new.team_id, new.org_id);
  else
    if tg_op = 'INSERT' or new.name is distinct from old.name then
      perform private.check_length('name', btrim(new.name), 200);
    end if;
    perform private.check_levels(new.metadata_visibility, new.content_visibility, new.team_id, new.org_id);
    if new.user_id is distinct from (select auth.uid()) then
      perform private.hold_journal_gate(new.user_id, false);
    end if;
    if tg_op = 'INSERT' or (new.team_id, new.org_id, new.metadata_visibility, new.content_visibility)
       is distinct from (old.team_id, old.org_id, old.metadata_visibility, old.content_visibility) then
      perform private.check_sharing_target(new.team_id, new.org_id, null);
    end if;
  end if;
  -- Each id when it is set, as a foreign key would (the removal cascade clears one at a time).
  if tg_op = 'INSERT' or (new.team_id, new.org_id) is distinct from (old.team_id, old.org_id) then
    perform private.check_owner_membership(new.user_id,
      case when new.team_id is distinct from old.team_id then new.team_id end,
      case when new.org_id is distinct from old.org_id then new.org_id end);
  end if;
  if tg_op = 'UPDATE' then
    new.updated_at := now();
  end if;
  return new;
end
$$;
create trigger notebooks_prepare before insert or update on public.notebooks
  for each row execute function private.prepare_notebook();

-- Entries inherit at once: re-derive the scopes of a notebook's entries when its levels change.
create or replace function private.rederive_notebook_entries() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.journal_entries set notebook_id = notebook_id
   where notebook_id = new.id and 'user' in (metadata_visibility, content_visibility);
  return null;
end
$$;
create trigger notebooks_rederive_entries
  after update of metadata_visibility, content_visibility, team_id, org_id on public.notebooks
  for each row execute function private.rederive_notebook_entries();

-- Entries: the effective scopes derived (own level, else the notebook's, else user). The
-- notebook is read `for share` when the entry enters it (insert or move): a change of the
-- notebook's levels re-derives only the entries it can see, never an uncommitted one, so the
-- two wait for each other instead.
create or replace function private.prepare_journal_entry() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  nb public.notebooks;
begin
  if tg_op = 'UPDATE' and (new.user_id is distinct from old.user_id or new.created_at is distinct from old.created_at) then
    raise exception 'an entry''s owner and creation time cannot change' using errcode = '42501';
  end if;
  if pg_trigger_depth() > 1 then
    if (new.metadata_visibility, new.content_visibility) is distinct from (
        private.orphan_safe_level(new.metadata_visibility, new.team_id, new.org_id),
        private.orphan_safe_level(new.content_visibility, new.team_id, new.org_id)) then
      new.metadata_visibility := private.orphan_safe_level(new.metadata_visibility, new.team_id, new.org_id);
      new.content_visibility := private.orphan_safe_level(new.content_visibility, new.team_id, new.org_id);
      -- Back to owner-only, not to the notebook's levels: those could be wider than what the
      -- owner chose (a team-only entry in a public notebook must not become public).
      new.notebook_id := null;
    end if;
  else
    if tg_op = 'INSERT' or new.title is distinct from old.title then
      perform private.check_length('title', new.title, 200);
    end if;
    if new.mood is not null and (tg_op = 'INSERT' or new.mood is distinct from old.mood) then
      perform private.check_length('mood', new.mood, 50);
    end if;
    if (tg_op = 'INSERT' or new.tags is distinct from old.tags) and not private.valid_tags(new.tags) then
      raise exception 'tags: at most 20 tags, each 1 to 50 characters' using errcode = '23514';
    end if;
    perform private.check_levels(new.metadata_visibility, new.content_visibility, new.team_id, new.org_id);
    if new.user_id is distinct from (select auth.uid()) then
      perform private.hold_journal_gate(new.user_id, false);
    end if;
    if tg_op = 'INSERT'
       or (new.team_id, new.org_id, new.notebook_id, new.metadata_visibility, new.content_visibility)
          is distinct from (old.team_id, old.org_id, old.notebook_id, old.metadata_visibility, old.content_visibility) then
      perform private.check_sharing_target(new.team_id, new.org_id, new.notebook_id);
    end if;
  end if;
  -- Each id when it is set, as a foreign key would (the removal cascade clears one at a time).
  if tg_op = 'INSERT' or (new.team_id, new.org_id) is distinct from (old.team_id, old.org_id) then
    perform private.check_owner_membership(new.user_id,
      case when new.team_id is distinct from old.team_id then new.team_id end,
      case when new.org_id is distinct from old.org_id then new.org_id end);
  end if;

  -- Rule 5: an entry's own level wins unless it is user; then the notebook's (or user).
  if new.notebook_id is not null and (tg_op = 'INSERT' or new.notebook_id is distinct from old.notebook_id) then
    select * into nb from public.notebooks where id = new.notebook_id for share;
  else
    select * into nb from public.notebooks where id = new.notebook_id;
  end if;
  new.meta_scope := case when new.metadata_visibility <> 'user' then new.metadata_visibility
                         else coalesce(nb.metadata_visibility, 'user') end;
  new.meta_scope_id := case when new.metadata_visibility <> 'user'
                            then private.scope_of(new.metadata_visibility, new.team_id, new.org_id)
                            else private.scope_of(nb.metadata_visibility, nb.team_id, nb.org_id) end;
  new.content_scope := case when new.content_visibility <> 'user' then new.content_visibility
                            else coalesce(nb.content_visibility, 'user') end;
  new.content_scope_id := case when new.content_visibility <> 'user'
                               then private.scope_of(new.content_visibility, new.team_id, new.org_id)
                               else private.scope_of(nb.content_visibility, nb.team_id, nb.org_id) end;

  if tg_op = 'UPDATE' and (new.title, new.mood, new.tags, new.metadata_visibility, new.content_visibility,
      new.team_id, new.org_id, new.notebook_id, new.music_track_id)
      is distinct from (old.title, old.mood, old.tags, old.metadata_visibility, old.content_visibility,
      old.team_id, old.org_id, old.notebook_id, old.music_track_id) then
    new.updated_at := now();
  end if;
  return new;
end
$$;
create trigger journal_entries_prepare before insert or update on public.journal_entries
  for each row execute function private.prepare_journal_entry();

-- An entry created in or moved into a notebook takes the notebook's team or organization only
-- while the writer still belongs to it. check_sharing_target checks the entry's own
-- team_id/org_id; this checks the scopes the entry ends up with, which include what it
-- inherits from the notebook. Runs after journal_entries_prepare (name order).
create or replace function private.check_inherited_scope() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
begin
  if uid is null or pg_trigger_depth() > 1 or new.notebook_id is null then
    return new; -- trusted sessions; re-derivations by our own triggers; no notebook
  end if;
  if tg_op = 'UPDATE'
     and (new.notebook_id, new.metadata_visibility, new.content_visibility, new.team_id, new.org_id)
         is not distinct from (old.notebook_id, old.metadata_visibility, old.content_visibility, old.team_id, old.org_id) then
    return new;
  end if;
  -- A missing team/org id is refused before (private.check_levels names the field).
  if (new.meta_scope = 'team' and new.meta_scope_id is not null and not exists (
        select 1 from public.team_members where team_id = new.meta_scope_id and user_id = uid))
     or (new.content_scope = 'team' and new.content_scope_id is not null and not exists (
        select 1 from public.team_members where team_id = new.content_scope_id and user_id = uid)) then
    raise exception 'notebook_id: this notebook shares with a team you are not a member of' using errcode = '22023';
  end if;
  if (new.meta_scope = 'org' and new.meta_scope_id is not null and not exists (
        select 1 from public.organization_members where org_id = new.meta_scope_id and user_id = uid))
     or (new.content_scope = 'org' and new.content_scope_id is not null and not exists (
        select 1 from public.organization_members where org_id = new.content_scope_id and user_id = uid)) then
    raise exception 'notebook_id: this notebook shares with an organization you are not a member of' using errcode = '22023';
  end if;
  return new;
end
$$;
comment on function private.check_inherited_scope() is
  'Refuses an entry created in or moved into a notebook whose team/organization the writer has left.';
create trigger journal_entries_scope_membership before insert or update on public.journal_entries
  for each row execute function private.check_inherited_scope();

-- The text's copy of the entry's scopes follows the entry.
create or replace function private.sync_content_scope() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.journal_entry_contents
     set content_scope = new.content_scope, content_scope_id = new.content_scope_id,
         meta_scope = new.meta_scope, meta_scope_id = new.meta_scope_id
   where entry_id = new.id;
  return null;
end
$$;
-- A WHEN clause, not `update of <columns>`: the scopes change through the BEFORE trigger,
-- which a column-list trigger would not notice.
create trigger journal_entries_sync_content_scope
  after update on public.journal_entries
  for each row
  when ((old.content_scope, old.content_scope_id, old.meta_scope, old.meta_scope_id)
        is distinct from (new.content_scope, new.content_scope_id, new.meta_scope, new.meta_scope_id))
  execute function private.sync_content_scope();

-- Texts: the scopes copied from the entry. A new text locks its entry (as an update of it
-- would): a change of the entry's scope copies the scope to the texts it can see, never an
-- uncommitted one, so the two wait for each other instead.
create or replace function private.prepare_entry_content() returns trigger
language plpgsql security definer
set search_path = ''
as $$
declare
  e public.journal_entries;
begin
  select * into e from public.journal_entries where id = new.entry_id;
  if e.id is null then
    raise exception 'entry_id: no such entry' using errcode = '23503';
  end if;
  if tg_op = 'UPDATE' and new.entry_id is distinct from old.entry_id then
    raise exception 'content cannot move to another entry' using errcode = '42501';
  end if;
  if pg_trigger_depth() = 1 and e.user_id is distinct from (select auth.uid()) then
    perform private.hold_journal_gate(e.user_id, false);
  end if;
  if tg_op = 'INSERT' then
    select * into e from public.journal_entries where id = new.entry_id for no key update;
    if e.id is null then
      raise exception 'entry_id: no such entry' using errcode = '23503';
    end if;
  end if;
  new.user_id := e.user_id;
  new.content_scope := e.content_scope;
  new.content_scope_id := e.content_scope_id;
  new.meta_scope := e.meta_scope;
  new.meta_scope_id := e.meta_scope_id;
  return new;
end
$$;
create trigger journal_entry_contents_prepare before insert or update on public.journal_entry_contents
  for each row execute function private.prepare_entry_content();

-- Editing the text touches the entry's updated_at.
create or replace function private.touch_entry_on_content() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if new.content is distinct from old.content then
    update public.journal_entries set updated_at = now() where id = new.entry_id;
  end if;
  return null;
end
$$;
create trigger journal_entry_contents_touch after update of content on public.journal_entry_contents
  for each row execute function private.touch_entry_on_content();

-- ---------------------------------------------------------------------------------------------
-- Leaving a team or an organization
-- ---------------------------------------------------------------------------------------------

-- Once the member's gate is held, their entries and notebooks that named the group lose its
-- id, and the fallback above does the rest in the same statement (the levels that named it
-- turn back to user, an entry whose levels fell back leaves its notebook, a notebook's
-- inheriting entries are re-derived, texts follow their entry). Runs for a removal by an
-- admin or owner, for leaving, and in the cascades of leaving an organization (the team
-- memberships it deletes clear team_id after the organization's own trigger cleared org_id)
-- and of deleting a team or an organization. Being added again restores nothing.
create or replace function private.unshare_on_leaving_team() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.hold_journal_gate(old.user_id, true);
  update public.journal_entries set team_id = null where team_id = old.team_id and user_id = old.user_id;
  update public.notebooks set team_id = null where team_id = old.team_id and user_id = old.user_id;
  return null;
end
$$;
comment on function private.unshare_on_leaving_team() is
  'After a team membership is deleted: takes the member''s journal gate exclusively, then takes their entries and notebooks out of the team.';
create or replace function private.unshare_on_leaving_org() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.hold_journal_gate(old.user_id, true);
  update public.journal_entries set org_id = null where org_id = old.org_id and user_id = old.user_id;
  update public.notebooks set org_id = null where org_id = old.org_id and user_id = old.user_id;
  return null;
end
$$;
comment on function private.unshare_on_leaving_org() is
  'After an organization membership is deleted (its team memberships went first, by cascade): takes the member''s journal gate exclusively, then takes their entries and notebooks out of the organization.';
create trigger team_members_unshare_on_leaving after delete on public.team_members
  for each row execute function private.unshare_on_leaving_team();
create trigger organization_members_unshare_on_leaving after delete on public.organization_members
  for each row execute function private.unshare_on_leaving_org();

-- Rows shared into a team or organization their owner already left fall back as a removal
-- does. A function so that supabase/tests/journal_visibility.test.sql can check it; as a
-- direct session (no auth.uid()) the triggers derive the scopes without re-checking the writer.
create or replace function private.unshare_where_owner_left() returns integer
language plpgsql
set search_path = ''
as $$
declare
  entries integer;
  books integer;
begin
  with stale as (
    select e.id,
           e.team_id is not null and not exists (
             select 1 from public.team_members m where m.team_id = e.team_id and m.user_id = e.user_id) as team_gone,
           e.org_id is not null and not exists (
             select 1 from public.organization_members m where m.org_id = e.org_id and m.user_id = e.user_id) as org_gone
      from public.journal_entries e
     where e.team_id is not null or e.org_id is not null
  ), fallback as (
    select e.id, s.team_gone, s.org_gone,
           case when (e.metadata_visibility = 'team' and s.team_gone) or (e.metadata_visibility = 'org' and s.org_gone)
                then 'user' else e.metadata_visibility end as meta,
           case when (e.content_visibility = 'team' and s.team_gone) or (e.content_visibility = 'org' and s.org_gone)
                then 'user' else e.content_visibility end as content
      from public.journal_entries e join stale s on s.id = e.id
     where s.team_gone or s.org_gone
  )
  update public.journal_entries e
     set team_id = case when f.team_gone then null else e.team_id end,
         org_id = case when f.org_gone then null else e.org_id end,
         metadata_visibility = f.meta,
         content_visibility = f.content,
         -- Back to owner-only, not to the notebook's levels (see prepare_journal_entry).
         notebook_id = case when (f.meta, f.content) is distinct from (e.metadata_visibility, e.content_visibility)
                            then null else e.notebook_id end
    from fallback f
   where f.id = e.id;
  get diagnostics entries = row_count;

  with stale as (
    select n.id,
           n.team_id is not null and not exists (
             select 1 from public.team_members m where m.team_id = n.team_id and m.user_id = n.user_id) as team_gone,
           n.org_id is not null and not exists (
             select 1 from public.organization_members m where m.org_id = n.org_id and m.user_id = n.user_id) as org_gone
      from public.notebooks n
     where n.team_id is not null or n.org_id is not null
  )
  update public.notebooks n
     set team_id = case when s.team_gone then null else n.team_id end,
         org_id = case when s.org_gone then null else n.org_id end,
         metadata_visibility = case when (n.metadata_visibility = 'team' and s.team_gone) or (n.metadata_visibility = 'org' and s.org_gone)
                                    then 'user' else n.metadata_visibility end,
         content_visibility = case when (n.content_visibility = 'team' and s.team_gone) or (n.content_visibility = 'org' and s.org_gone)
                                   then 'user' else n.content_visibility end
    from stale s
   where s.id = n.id and (s.team_gone or s.org_gone);
  get diagnostics books = row_count;
  return entries + books;
end
$$;
comment on function private.unshare_where_owner_left() is
  'Once, before removals took entries along: entries and notebooks naming a team/organization their owner left fall back to user, as a removal does since (private.unshare_on_leaving_team/_org). Returns the rows changed.';

-- ---------------------------------------------------------------------------------------------
-- Who reads what
-- ---------------------------------------------------------------------------------------------
-- The same visibility rule for the three tables, written out so each stays one indexed OR.
-- Memberships are compared as arrays (organizations_teams.sql says why).

create policy "notebooks: visible by metadata level" on public.notebooks
  for select to authenticated
  using (
    user_id = (select auth.uid())
    or metadata_visibility = 'public'
    or (metadata_visibility = 'team' and meta_scope_id = any ((select private.my_team_id_array())::uuid[]))
    or (metadata_visibility = 'org' and meta_scope_id = any ((select private.my_org_id_array())::uuid[]))
    or (select private.is_super_admin())
  );
create policy "notebooks: public ones are visible to everyone" on public.notebooks
  for select to anon
  using (metadata_visibility = 'public');
create policy "notebooks: owners create" on public.notebooks
  for insert to authenticated with check (user_id = (select auth.uid()));
create policy "notebooks: owners update" on public.notebooks
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy "notebooks: owners delete" on public.notebooks
  for delete to authenticated using (user_id = (select auth.uid()));

create policy "journal_entries: visible by effective metadata level" on public.journal_entries
  for select to authenticated
  using (
    user_id = (select auth.uid())
    or meta_scope = 'public'
    or (meta_scope = 'team' and meta_scope_id = any ((select private.my_team_id_array())::uuid[]))
    or (meta_scope = 'org' and meta_scope_id = any ((select private.my_org_id_array())::uuid[]))
    or (select private.is_super_admin())
  );
comment on policy "journal_entries: visible by effective metadata level" on public.journal_entries is
  'Owner, public, member of the team/org the effective level names, or super admin (rules 3, 5, 6).';
create policy "journal_entries: public metadata is visible to everyone" on public.journal_entries
  for select to anon
  using (meta_scope = 'public');
create policy "journal_entries: owners create" on public.journal_entries
  for insert to authenticated with check (user_id = (select auth.uid()));
create policy "journal_entries: owners update" on public.journal_entries
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy "journal_entries: owners delete" on public.journal_entries
  for delete to authenticated using (user_id = (select auth.uid()));

create policy "journal_entry_contents: visible by effective content level" on public.journal_entry_contents
  for select to authenticated
  using (
    user_id = (select auth.uid())
    or (
      (content_scope = 'public'
        or (content_scope = 'team' and content_scope_id = any ((select private.my_team_id_array())::uuid[]))
        or (content_scope = 'org' and content_scope_id = any ((select private.my_org_id_array())::uuid[])))
      and (meta_scope = 'public'
        or (meta_scope = 'team' and meta_scope_id = any ((select private.my_team_id_array())::uuid[]))
        or (meta_scope = 'org' and meta_scope_id = any ((select private.my_org_id_array())::uuid[])))
    )
    or (select private.is_super_admin())
  );
comment on policy "journal_entry_contents: visible by effective content level" on public.journal_entry_contents is
  'Content needs its own level to admit the viewer and the entry''s metadata level too (both scopes are copied from the entry).';
create policy "journal_entry_contents: public content is visible to everyone" on public.journal_entry_contents
  for select to anon
  using (content_scope = 'public' and meta_scope = 'public');
create policy "journal_entry_contents: owners write" on public.journal_entry_contents
  for insert to authenticated
  with check (exists (select 1 from public.journal_entries e where e.id = entry_id and e.user_id = (select auth.uid())));
create policy "journal_entry_contents: owners update" on public.journal_entry_contents
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));

-- ---------------------------------------------------------------------------------------------
-- Entry decorations
-- ---------------------------------------------------------------------------------------------
-- What an entry carries beside its text, so clients draw it without a second request: its
-- generated background (background_url, ai_usage.sql), the icon of the viewer's active tone
-- pack for its mood (tone_packs.sql) and the linked track (music.sql).

-- The viewer's active pack's image for an entry's mood, one entry at a time (the feed reads the
-- viewer's icons once per page instead). Anonymous viewers and entries without a mood return at
-- once; which pack counts is decided by private.viewer_tone_icons alone.
create or replace function private.tone_icon_url(mood text) returns text
language plpgsql stable
set search_path = ''
as $$
begin
  -- Anonymous viewers never reach the helper (they are not granted it).
  if mood is null or auth.uid() is null then
    return null;
  end if;
  return private.active_tone_icon_url(mood);
end
$$;
comment on function private.tone_icon_url(text) is
  'Icon URL of the viewer''s active tone pack for this mood, or null (no viewer, no mood, no active pack the viewer may use, no image for the tone).';
grant execute on function private.tone_icon_url(text) to anon, authenticated, service_role;

-- The linked track for display. Security invoker on purpose: the track cache is readable by
-- every role, and the entry's own visibility already decided whether this row is seen at all.
create or replace function private.entry_track(music_track_id text) returns jsonb
language sql stable strict -- most entries have no track: null without running the lookup
set search_path = ''
as $$
  select jsonb_build_object('id', t.id, 'name', t.name, 'artists', to_jsonb(t.artists), 'album', t.album,
                            'album_image_url', t.album_image_url, 'image_url', t.album_image_url,
                            'external_url', t.external_url)
    from public.music_tracks t
   where t.id = entry_track.music_track_id
$$;
comment on function private.entry_track(text) is
  'Display of a linked track: {id, name, artists, album, album_image_url, external_url} (image_url: the same URL, for the seam''s first readers), or null.';
grant execute on function private.entry_track(text) to anon, authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Reading and writing entries
-- ---------------------------------------------------------------------------------------------
-- What clients call to write and read entries (RPC through PostgREST, and /api/journal):
-- atomic create/update of metadata with content, the visibility feed and aggregates. Every
-- function runs as the caller (security invoker): RLS decides.

-- Entries as a viewer sees them. A new column goes at the end (`create or replace view`
-- keeps the existing ones in place).
-- Owners always see their own entries whole, super admins every entry (rule 6): an entry
-- written without a text (a client inserting into journal_entries alone) reads as an empty
-- text for them, never as hidden.
create or replace function private.sees_whole_entry(owner uuid) returns boolean
language plpgsql stable
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    return false; -- anonymous: neither an owner nor a super admin (and not granted is_super_admin)
  end if;
  return owner = (select auth.uid()) or private.is_super_admin();
end
$$;
comment on function private.sees_whole_entry(uuid) is
  'True for the entry''s owner and for super admins (rule 6); read only for entries without a text row.';
grant execute on function private.sees_whole_entry(uuid) to anon, authenticated, service_role;

create or replace view public.journal_entry_details with (security_invoker = true) as
select e.id, e.user_id, e.notebook_id, e.title,
       case when c.entry_id is null and private.sees_whole_entry(e.user_id) then '' else c.content end as content,
       c.entry_id is null and not private.sees_whole_entry(e.user_id) as content_hidden,
       e.mood, e.tags, e.metadata_visibility, e.content_visibility, e.team_id, e.org_id,
       e.music_track_id, e.created_at, e.updated_at,
       e.background_url, private.tone_icon_url(e.mood) as tone_icon_url, private.entry_track(e.music_track_id) as track
  from public.journal_entries e
  left join public.journal_entry_contents c on c.entry_id = e.id;
comment on view public.journal_entry_details is
  'Entries as a viewer sees them: content is null and content_hidden true where the content policy refuses.';
revoke all on public.journal_entry_details from anon, authenticated;
grant select on public.journal_entry_details to anon, authenticated;

-- POST /api/journal: the entry and its content in one transaction.
create or replace function public.create_journal_entry(
  title text,
  content text default '',
  mood text default null,
  tags text[] default '{}',
  notebook_id uuid default null,
  metadata_visibility text default 'user',
  content_visibility text default 'user',
  team_id uuid default null,
  org_id uuid default null
) returns setof public.journal_entry_details
language plpgsql
set search_path = ''
as $$
declare
  new_id uuid;
begin
  insert into public.journal_entries (title, mood, tags, notebook_id, metadata_visibility, content_visibility, team_id, org_id)
  values (create_journal_entry.title, create_journal_entry.mood, coalesce(create_journal_entry.tags, '{}'),
          create_journal_entry.notebook_id, coalesce(create_journal_entry.metadata_visibility, 'user'),
          coalesce(create_journal_entry.content_visibility, 'user'), create_journal_entry.team_id,
          create_journal_entry.org_id)
  returning id into new_id;
  insert into public.journal_entry_contents (entry_id, content)
  values (new_id, coalesce(create_journal_entry.content, ''));
  return query select * from public.journal_entry_details d where d.id = new_id;
end
$$;
grant execute on function public.create_journal_entry(text, text, text, text[], uuid, text, text, uuid, uuid) to authenticated;

-- PUT /api/journal/:id: metadata and content in one transaction; "not found" is PT404, which
-- PostgREST answers 404.
create or replace function public.update_journal_entry(entry_id uuid, patch jsonb)
returns setof public.journal_entry_details
language plpgsql
set search_path = ''
as $$
declare
  updated uuid;
begin
  if jsonb_typeof(patch) is distinct from 'object' then
    raise exception 'patch must be a JSON object' using errcode = '22023';
  end if;
  update public.journal_entries e set
    title = case when patch ? 'title' then patch ->> 'title' else e.title end,
    mood = case when patch ? 'mood' then patch ->> 'mood' else e.mood end,
    tags = case when patch ? 'tags' then array(select jsonb_array_elements_text(patch -> 'tags')) else e.tags end,
    notebook_id = case when patch ? 'notebook_id' then (patch ->> 'notebook_id')::uuid else e.notebook_id end,
    metadata_visibility = case when patch ? 'metadata_visibility' then patch ->> 'metadata_visibility' else e.metadata_visibility end,
    content_visibility = case when patch ? 'content_visibility' then patch ->> 'content_visibility' else e.content_visibility end,
    team_id = case when patch ? 'team_id' then (patch ->> 'team_id')::uuid else e.team_id end,
    org_id = case when patch ? 'org_id' then (patch ->> 'org_id')::uuid else e.org_id end
  where e.id = update_journal_entry.entry_id and e.user_id = (select auth.uid())
  returning e.id into updated;
  if updated is null then
    if exists (select 1 from public.journal_entries e where e.id = update_journal_entry.entry_id) then
      raise exception 'only the owner may change this entry' using errcode = '42501';
    end if;
    raise exception 'entry not found' using errcode = 'PT404';
  end if;
  if patch ? 'content' then
    insert into public.journal_entry_contents as c (entry_id, content)
    values (updated, coalesce(patch ->> 'content', ''))
    on conflict on constraint journal_entry_contents_pkey do update set content = excluded.content;
  end if;
  return query select * from public.journal_entry_details d where d.id = updated;
end
$$;
grant execute on function public.update_journal_entry(uuid, jsonb) to authenticated;

/*
 * GET /api/journal (scope own) and ?scope=visible: one page, newest first, after an optional
 * (before_created_at, before_id) cursor; the cursor is an index condition.
 *
 * PL/pgSQL, whose statements keep their plans for the session (a SQL function with a SET
 * clause is planned again on every call), with plan_cache_mode forced to generic so each
 * branch stays read newest-first from its own index. Without a search the visible page's
 * candidates come from private.visible_entry_page_ids (the branches, memberships read once)
 * and are then selected as the caller, so the policies of journal_entries and
 * journal_entry_contents decide every row returned, content included. A search must not match
 * content the caller may not read, so it runs as the caller: four branches under RLS. The
 * viewer's tone icons are read once per page.
 *
 * jit off, here and in visible_entry_page_ids, whoever calls: a generic plan's estimate grows
 * with the table (its optional filters make the public branch look like a whole-index scan:
 * cost 119,895 at 10,000,000 entries), past jit_above_cost (100,000), and compiling took
 * 50-60 ms for a page that runs in 1 ms. PostgREST's roles have jit off already (role
 * settings); a session that sets its role, a pooler in session mode or service_role do not.
 */
create or replace function public.journal_feed(
  scope text default 'own',
  team_id uuid default null,
  org_id uuid default null,
  notebook_id uuid default null,
  mood text default null,
  tag text default null,
  search text default null,
  before_created_at timestamptz default null,
  before_id uuid default null,
  page_size integer default 50
) returns setof public.journal_entry_details
language plpgsql stable
set search_path = ''
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
  me uuid := auth.uid(); -- a plain expression: no query per call
  -- No cursor: start after the newest possible entry (keeps the cursor an index condition).
  cursor_at timestamptz := coalesce(journal_feed.before_created_at, 'infinity'::timestamptz);
  cursor_id uuid := coalesce(journal_feed.before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid);
  n integer := least(greatest(coalesce(journal_feed.page_size, 50), 1), 200);
  -- The viewer's icons once per page (mood -> URL), not one lookup per entry; set below for a
  -- signed-in viewer only (anon may not call the helper).
  icons jsonb;
  pattern text := '%' || replace(replace(replace(journal_feed.search, '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
  if me is null and journal_feed.scope is distinct from 'visible' then
    return; -- an anonymous caller has no entries of their own
  end if;
  if me is not null then
    icons := private.viewer_tone_icons();
  end if;
  if journal_feed.scope is distinct from 'visible' then
    return query
      select p.id, p.user_id, p.notebook_id, p.title, coalesce(c.content, ''), false, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id)
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
            from public.journal_entries e
           where e.user_id = me
             and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
             and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
             and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
             and (journal_feed.mood is null or e.mood = journal_feed.mood)
             and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
             and (journal_feed.search is null or e.title ilike pattern or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
             and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
           order by e.created_at desc, e.id desc
           limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  elsif me is null then
    -- Anonymous callers: public entries (rule 3, public is anyone), as journal_entry_details
    -- shows them to anon; the policies for anon decide the rows and the text.
    return query
      select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, null::text, private.entry_track(p.music_track_id)
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
            from public.journal_entries e
           where e.meta_scope = 'public' and journal_feed.team_id is null and journal_feed.org_id is null
             and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
             and (journal_feed.mood is null or e.mood = journal_feed.mood)
             and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
             and (journal_feed.search is null or e.title ilike pattern or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
             and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
           order by e.created_at desc, e.id desc
           limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  elsif private.is_super_admin() then
    -- Super admins may see every entry (rule 6). Planned on each call with the request's
    -- values (EXECUTE): their filters decide the index (a team's or an organization's, a
    -- notebook's, or simply the newest), which one generic plan could not.
    return query execute $feed$
      select p.id, p.user_id, p.notebook_id, p.title, coalesce(c.content, ''), false, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, $10 ->> p.mood, private.entry_track(p.music_track_id)
        from (
          select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                 e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
            from public.journal_entries e
           where ($1 is null or (e.meta_scope = 'team' and e.meta_scope_id = $1))
             and ($2 is null or (e.meta_scope = 'org' and e.meta_scope_id = $2))
             and ($3 is null or e.notebook_id = $3)
             and ($4 is null or e.mood = $4)
             and ($5 is null or e.tags @> array[$5])
             and ($6 is null or e.title ilike $6 or exists (
                   select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike $6))
             and e.created_at <= $7 and (e.created_at < $7 or e.id < $8)
           order by e.created_at desc, e.id desc
           limit $9) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc
    $feed$ using journal_feed.team_id, journal_feed.org_id, journal_feed.notebook_id, journal_feed.mood,
                 journal_feed.tag, pattern, cursor_at, cursor_id, n, icons;
  elsif journal_feed.search is null then
    -- The page's candidates come from private.visible_entry_page_ids (the branches, memberships
    -- read once); this select reads them as the caller, so the policies of journal_entries and
    -- journal_entry_contents decide what is returned, content included.
    return query
      select e.id, e.user_id, e.notebook_id, e.title, case when c.entry_id is null and e.user_id = me then '' else c.content end,
             c.entry_id is null and e.user_id is distinct from me, e.mood, e.tags,
             e.metadata_visibility, e.content_visibility, e.team_id, e.org_id, e.music_track_id,
             e.created_at, e.updated_at, e.background_url, icons ->> e.mood, private.entry_track(e.music_track_id)
        from public.journal_entries e
        left join public.journal_entry_contents c on c.entry_id = e.id
       where e.id = any (private.visible_entry_page_ids(journal_feed.team_id, journal_feed.org_id,
                           journal_feed.notebook_id, journal_feed.mood, journal_feed.tag, cursor_at, cursor_id, n))
       order by e.created_at desc, e.id desc;
  else
    -- A search must not match content the caller may not read, so it runs as the caller: four
    -- branches, each newest-first from its own index, limited to the page size, under RLS.
    return query
      select p.id, p.user_id, p.notebook_id, p.title, case when c.entry_id is null and p.user_id = me then '' else c.content end,
             c.entry_id is null and p.user_id is distinct from me, p.mood, p.tags,
             p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
             p.created_at, p.updated_at, p.background_url, icons ->> p.mood, private.entry_track(p.music_track_id)
        from (
          select u.* from (
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
               from public.journal_entries e
              where e.user_id = me
                and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
                and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
                and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                and (journal_feed.mood is null or e.mood = journal_feed.mood)
                and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                and (journal_feed.search is null or e.title ilike pattern or exists (
                      select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
              order by e.created_at desc, e.id desc
              limit n)
            union all
            (select e.*
               from (select private.my_team_ids() as tid) t
               cross join lateral (
                 select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
                   from public.journal_entries e
                  where journal_feed.org_id is null
                    and e.meta_scope = 'team' and e.meta_scope_id = t.tid and e.user_id <> me
                    and (journal_feed.team_id is null or t.tid = journal_feed.team_id)
                    and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                    and (journal_feed.mood is null or e.mood = journal_feed.mood)
                    and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                    and (journal_feed.search is null or e.title ilike pattern or exists (
                          select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                    and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
                  order by e.created_at desc, e.id desc
                  limit n) e)
            union all
            (select e.*
               from (select private.my_org_ids() as oid) o
               cross join lateral (
                 select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                        e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
                   from public.journal_entries e
                  where journal_feed.team_id is null
                    and e.meta_scope = 'org' and e.meta_scope_id = o.oid and e.user_id <> me
                    and (journal_feed.org_id is null or o.oid = journal_feed.org_id)
                    and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                    and (journal_feed.mood is null or e.mood = journal_feed.mood)
                    and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                    and (journal_feed.search is null or e.title ilike pattern or exists (
                          select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                    and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
                  order by e.created_at desc, e.id desc
                  limit n) e)
            union all
            (select e.id, e.user_id, e.notebook_id, e.title, e.mood, e.tags, e.metadata_visibility,
                    e.content_visibility, e.team_id, e.org_id, e.music_track_id, e.background_url, e.created_at, e.updated_at
               from public.journal_entries e
              where journal_feed.team_id is null and journal_feed.org_id is null
                and e.meta_scope = 'public' and e.user_id <> me
                and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
                and (journal_feed.mood is null or e.mood = journal_feed.mood)
                and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
                and (journal_feed.search is null or e.title ilike pattern or exists (
                      select 1 from public.journal_entry_contents x where x.entry_id = e.id and x.content ilike pattern))
                and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
              order by e.created_at desc, e.id desc
              limit n)
          ) u
          order by u.created_at desc, u.id desc
          limit n) p
        left join public.journal_entry_contents c on c.entry_id = p.id
       order by p.created_at desc, p.id desc;
  end if;
end
$$;
comment on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) is
  'A page of entries the caller may see (scope own or visible), filterable, newest first, keyset-paginated. '
  'Anonymous callers: visible gives the public entries (as journal_entry_details), own none.';
grant execute on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) to anon, authenticated;

-- The visible feed's candidates: its four index-ordered branches (own, my teams, my
-- organizations, public; for super admins own and everyone else's) in one security definer
-- function that reads the caller's memberships once and returns the page's ids. It can only
-- propose, never widen: journal_feed reads the ids as the caller. Its branches are the
-- metadata policy spelled out; if they ever admitted an entry the policy does not, the page
-- would come back short, which supabase/tests/journal_visibility.test.sql checks.
create or replace function private.visible_entry_page_ids(
  team_id uuid, org_id uuid, notebook_id uuid, mood text, tag text,
  cursor_at timestamptz, cursor_id uuid, n integer
) returns uuid[]
language plpgsql stable security definer
set search_path = ''
set plan_cache_mode = force_generic_plan
set jit = off -- as journal_feed: its generic plan passes jit_above_cost at 10,000,000 entries
as $$
declare
  me uuid := auth.uid();
begin
  if me is null then
    return '{}'::uuid[];
  end if;
  return array(
    with my_teams as (select m.team_id from public.team_members m where m.user_id = me),
    my_orgs as (select m.org_id from public.organization_members m where m.user_id = me)
    select u.id from (
      (select e.id, e.created_at from public.journal_entries e
        where e.user_id = me
          and (visible_entry_page_ids.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = visible_entry_page_ids.team_id))
          and (visible_entry_page_ids.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = visible_entry_page_ids.org_id))
          and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
          and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
          and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
          and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
        order by e.created_at desc, e.id desc limit n)
      union all
      (select e.id, e.created_at from my_teams t cross join lateral (
         select e.id, e.created_at from public.journal_entries e
          where visible_entry_page_ids.org_id is null
            and e.meta_scope = 'team' and e.meta_scope_id = t.team_id and e.user_id <> me
            and (visible_entry_page_ids.team_id is null or t.team_id = visible_entry_page_ids.team_id)
            and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
            and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
            and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
            and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
          order by e.created_at desc, e.id desc limit n) e)
      union all
      (select e.id, e.created_at from my_orgs o cross join lateral (
         select e.id, e.created_at from public.journal_entries e
          where visible_entry_page_ids.team_id is null
            and e.meta_scope = 'org' and e.meta_scope_id = o.org_id and e.user_id <> me
            and (visible_entry_page_ids.org_id is null or o.org_id = visible_entry_page_ids.org_id)
            and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
            and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
            and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
            and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
          order by e.created_at desc, e.id desc limit n) e)
      union all
      (select e.id, e.created_at from public.journal_entries e
        where visible_entry_page_ids.team_id is null and visible_entry_page_ids.org_id is null
          and e.meta_scope = 'public' and e.user_id <> me
          and (visible_entry_page_ids.notebook_id is null or e.notebook_id = visible_entry_page_ids.notebook_id)
          and (visible_entry_page_ids.mood is null or e.mood = visible_entry_page_ids.mood)
          and (visible_entry_page_ids.tag is null or e.tags @> array[visible_entry_page_ids.tag])
          and e.created_at <= cursor_at and (e.created_at < cursor_at or e.id < cursor_id)
        order by e.created_at desc, e.id desc limit n)
    ) u
    order by u.created_at desc, u.id desc
    limit n);
end
$$;
comment on function private.visible_entry_page_ids(uuid, uuid, uuid, text, text, timestamptz, uuid, integer) is
  'Ids of the caller''s next visible-feed page (metadata visibility, filters, keyset cursor), newest first; '
  'journal_feed reads them under RLS. Proposes only: never returns rows or content.';
grant execute on function private.visible_entry_page_ids(uuid, uuid, uuid, text, text, timestamptz, uuid, integer) to authenticated;

-- GET /api/journal/stats: counts, tags and moods over the entries the caller may see (for anon,
-- the public ones: RLS decides, as for journal_feed).
create or replace function public.journal_stats(scope text default 'own')
returns jsonb
language sql stable
set search_path = ''
as $$
  with visible as (
    select e.mood, e.tags from public.journal_entries e
     where journal_stats.scope = 'visible' or e.user_id = (select auth.uid())
  )
  select jsonb_build_object(
    'count', (select count(*) from visible),
    'tags', coalesce((select jsonb_agg(jsonb_build_object('tag', tag, 'count', n) order by n desc, tag)
                        from (select t as tag, count(*) as n from visible, unnest(visible.tags) t group by t) x), '[]'::jsonb),
    'moods', coalesce((select jsonb_agg(jsonb_build_object('mood', mood, 'count', n) order by n desc, mood)
                         from (select mood, count(*) as n from visible where mood is not null group by mood) y), '[]'::jsonb)
  )
$$;
grant execute on function public.journal_stats(text) to anon, authenticated;

-- ---------------------------------------------------------------------------------------------
-- Mentions
-- ---------------------------------------------------------------------------------------------
-- `@[Name](<user uuid>)` in an entry's text. Derived from content, so readable exactly where
-- the content is.

create table public.journal_entry_mentions (
  entry_id uuid not null references public.journal_entries (id) on delete cascade,
  mentioned_user_id uuid not null references public.profiles (id) on delete cascade,
  primary key (entry_id, mentioned_user_id)
);
alter table public.journal_entry_mentions enable row level security;
comment on table public.journal_entry_mentions is 'Users mentioned in an entry''s text (@[Name](uuid)); visible where the content is.';
revoke all on public.journal_entry_mentions from anon, authenticated;
grant select on public.journal_entry_mentions to authenticated;
create index journal_entry_mentions_user on public.journal_entry_mentions (mentioned_user_id);
create policy "journal_entry_mentions: visible where the content is" on public.journal_entry_mentions
  for select to authenticated
  using (exists (select 1 from public.journal_entry_contents c where c.entry_id = journal_entry_mentions.entry_id));

-- Replaces an entry's indexed mentions (@[name](user id) in its text) and stamps the text as
-- indexed.
create or replace function private.index_mentions(target_entry uuid, body text) returns void
language sql
set search_path = ''
as $$
  delete from public.journal_entry_mentions where entry_id = target_entry;
  insert into public.journal_entry_mentions (entry_id, mentioned_user_id)
  select distinct target_entry, p.id
    from regexp_matches(body, '@\[[^\]]{1,200}\]\(([0-9a-fA-F-]{36})\)', 'g') m
    join public.profiles p on p.id::text = lower(m[1]);
  update public.journal_entry_contents set mentions_indexed_at = now() where entry_id = target_entry;
$$;

-- After a text is written: indexes its mentions.
create or replace function private.reindex_mentions() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.index_mentions(new.entry_id, new.content);
  return null;
end
$$;
create trigger journal_entry_contents_mentions after insert or update of content on public.journal_entry_contents
  for each row execute function private.reindex_mentions();

-- Indexes the caller's texts written before the index existed, a batch at a time. It locks
-- texts (for update) before any write statement, so it takes the caller's gate first itself.
create or replace function private.backfill_mentions(batch_size integer default 200) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := (select auth.uid());
  r record;
  remaining integer;
begin
  if me is null then
    raise exception 'sign in to backfill your mentions' using errcode = '42501';
  end if;
  perform private.hold_journal_gate(me, false);
  for r in
    select entry_id, content from public.journal_entry_contents
     where user_id = me and mentions_indexed_at is null
     limit least(greatest(coalesce(batch_size, 200), 1), 1000)
     for update skip locked
  loop
    perform private.index_mentions(r.entry_id, r.content);
  end loop;
  select count(*) into remaining from public.journal_entry_contents where user_id = me and mentions_indexed_at is null;
  return remaining;
end
$$;
comment on function private.backfill_mentions(integer) is
  'Indexes one batch of the caller''s own texts written before the mention index; returns how many remain.';
grant execute on function private.backfill_mentions(integer) to authenticated;
create or replace function public.backfill_mentions(batch_size integer default 200) returns integer
language sql security invoker
set search_path = ''
as $$ select private.backfill_mentions(batch_size) $$;
grant execute on function public.backfill_mentions(integer) to authenticated;
