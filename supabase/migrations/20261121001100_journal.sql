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

create or replace function private.valid_visibility(level text) returns boolean
language sql immutable
set search_path = ''
as $$ select level in ('user', 'team', 'org', 'public') $$;

-- The scope a level resolves to: (level, the team or org it names).
create or replace function private.scope_of(level text, team uuid, org uuid) returns uuid
language sql immutable
set search_path = ''
as $$ select case level when 'team' then team when 'org' then org end $$;

create or replace function private.valid_tags(tags text[]) returns boolean
language sql immutable
set search_path = ''
as $$
  select coalesce(cardinality(tags), 0) <= 20
     and not exists (select 1 from unnest(tags) t where t is null or char_length(t) not between 1 and 50)
$$;

grant execute on function private.valid_visibility(text), private.scope_of(text, uuid, uuid), private.valid_tags(text[])
  to authenticated, service_role;

-- ---------------------------------------------------------------------------------------
-- Notebooks

create table public.notebooks (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  name text not null check (char_length(btrim(name)) between 1 and 200),
  metadata_visibility text not null default 'user' check (private.valid_visibility(metadata_visibility)),
  content_visibility text not null default 'user' check (private.valid_visibility(content_visibility)),
  team_id uuid references public.teams (id) on delete set null,
  org_id uuid references public.organizations (id) on delete set null,
  meta_scope_id uuid generated always as (private.scope_of(metadata_visibility, team_id, org_id)) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint notebooks_team_id_required check (team_id is not null or 'team' not in (metadata_visibility, content_visibility)),
  constraint notebooks_org_id_required check (org_id is not null or 'org' not in (metadata_visibility, content_visibility))
);
comment on table public.notebooks is
  'Groups of entries; entries whose level is user inherit the notebook''s levels (with its team/org).';
create index notebooks_by_owner on public.notebooks (user_id, created_at desc);
create index notebooks_team on public.notebooks (team_id);
create index notebooks_org on public.notebooks (org_id);

-- ---------------------------------------------------------------------------------------
-- Entries: metadata

create table public.journal_entries (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  notebook_id uuid references public.notebooks (id) on delete set null,
  title text not null check (char_length(title) between 1 and 200),
  mood text check (char_length(mood) between 1 and 50),
  tags text[] not null default '{}' check (private.valid_tags(tags)),
  metadata_visibility text not null default 'user' check (private.valid_visibility(metadata_visibility)),
  content_visibility text not null default 'user' check (private.valid_visibility(content_visibility)),
  team_id uuid references public.teams (id) on delete set null,
  org_id uuid references public.organizations (id) on delete set null,
  music_track_id text check (char_length(music_track_id) <= 100),
  meta_scope text not null default 'user',
  meta_scope_id uuid,
  content_scope text not null default 'user',
  content_scope_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint journal_entries_team_id_required check (team_id is not null or 'team' not in (metadata_visibility, content_visibility)),
  constraint journal_entries_org_id_required check (org_id is not null or 'org' not in (metadata_visibility, content_visibility))
);
comment on table public.journal_entries is
  'Entry metadata (title, mood, tags, dates). The text is in journal_entry_contents, behind its own policy.';
comment on column public.journal_entries.meta_scope is
  'Effective metadata level after notebook inheritance (derived by trigger; clients cannot write it).';
comment on column public.journal_entries.music_track_id is 'Provider id of the track last played at or before created_at.';

-- One index per branch of the visibility feed, each ordered newest first.
create index journal_entries_own on public.journal_entries (user_id, created_at desc, id desc);
create index journal_entries_team_scope on public.journal_entries (meta_scope_id, created_at desc, id desc)
  where meta_scope = 'team';
create index journal_entries_org_scope on public.journal_entries (meta_scope_id, created_at desc, id desc)
  where meta_scope = 'org';
create index journal_entries_public on public.journal_entries (created_at desc, id desc) where meta_scope = 'public';
create index journal_entries_newest on public.journal_entries (created_at desc, id desc); -- super admins' feed
create index journal_entries_notebook on public.journal_entries (notebook_id);
create index journal_entries_team on public.journal_entries (team_id);
create index journal_entries_org on public.journal_entries (org_id);

-- Entries: content

create table public.journal_entry_contents (
  entry_id uuid primary key references public.journal_entries (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  content text not null default '' check (char_length(content) <= 100000),
  content_scope text not null default 'user',
  content_scope_id uuid,
  meta_scope text not null default 'user',
  meta_scope_id uuid
);
comment on table public.journal_entry_contents is
  'Entry text, readable only by those the effective content level admits and who may see the metadata (both scopes are copied from the entry).';
create index journal_entry_contents_owner on public.journal_entry_contents (user_id);

-- ---------------------------------------------------------------------------------------
-- Derivation and validation

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

-- A team or organization that disappears (foreign key set null) drops the levels that named it
-- back to user (an entry also leaves its notebook, see prepare_journal_entry), so nothing
-- leaks and nothing is lost. Fired only by the cascade (depth > 1); a client's own write
-- without team_id/org_id fails the check constraint instead.
create or replace function private.orphan_safe_level(level text, team uuid, org uuid) returns text
language sql immutable
set search_path = ''
as $$
  select case when (level = 'team' and team is null) or (level = 'org' and org is null) then 'user' else level end
$$;

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
  elsif tg_op = 'INSERT' or (new.team_id, new.org_id, new.metadata_visibility, new.content_visibility)
        is distinct from (old.team_id, old.org_id, old.metadata_visibility, old.content_visibility) then
    perform private.check_sharing_target(new.team_id, new.org_id, null);
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
  elsif tg_op = 'INSERT'
     or (new.team_id, new.org_id, new.notebook_id, new.metadata_visibility, new.content_visibility)
        is distinct from (old.team_id, old.org_id, old.notebook_id, old.metadata_visibility, old.content_visibility) then
    perform private.check_sharing_target(new.team_id, new.org_id, new.notebook_id);
  end if;

  -- Rule 5: an entry's own level wins unless it is user; then the notebook's (or user).
  select * into nb from public.notebooks where id = new.notebook_id;
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

-- A content row takes its owner and scope from its entry, whatever the writer sent.
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

-- ---------------------------------------------------------------------------------------
-- Policies

alter table public.notebooks enable row level security;
alter table public.journal_entries enable row level security;
alter table public.journal_entry_contents enable row level security;

revoke all on public.notebooks, public.journal_entries, public.journal_entry_contents from anon, authenticated;
grant select on public.notebooks, public.journal_entries, public.journal_entry_contents to anon, authenticated;
grant insert (id, name, metadata_visibility, content_visibility, team_id, org_id),
      update (name, metadata_visibility, content_visibility, team_id, org_id), delete
  on public.notebooks to authenticated;
grant insert (id, notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id),
      update (notebook_id, title, mood, tags, metadata_visibility, content_visibility, team_id, org_id), delete
  on public.journal_entries to authenticated;
grant insert (entry_id, content), update (content) on public.journal_entry_contents to authenticated;

-- The same visibility rule for the three tables, written out so each stays one indexed OR.
create policy "notebooks: visible by metadata level" on public.notebooks
  for select to authenticated
  using (
    user_id = (select auth.uid())
    or metadata_visibility = 'public'
    or (metadata_visibility = 'team' and meta_scope_id in (select private.my_team_ids()))
    or (metadata_visibility = 'org' and meta_scope_id in (select private.my_org_ids()))
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
    or (meta_scope = 'team' and meta_scope_id in (select private.my_team_ids()))
    or (meta_scope = 'org' and meta_scope_id in (select private.my_org_ids()))
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
        or (content_scope = 'team' and content_scope_id in (select private.my_team_ids()))
        or (content_scope = 'org' and content_scope_id in (select private.my_org_ids())))
      and (meta_scope = 'public'
        or (meta_scope = 'team' and meta_scope_id in (select private.my_team_ids()))
        or (meta_scope = 'org' and meta_scope_id in (select private.my_org_ids())))
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

-- What clients read: metadata with the content the caller may see (null + content_hidden otherwise).
create view public.journal_entry_details with (security_invoker = true) as
select e.id, e.user_id, e.notebook_id, e.title, c.content, c.entry_id is null as content_hidden,
       e.mood, e.tags, e.metadata_visibility, e.content_visibility, e.team_id, e.org_id,
       e.music_track_id, e.created_at, e.updated_at
  from public.journal_entries e
  left join public.journal_entry_contents c on c.entry_id = e.id;
comment on view public.journal_entry_details is
  'Entries as a viewer sees them: content is null and content_hidden true where the content policy refuses.';
revoke all on public.journal_entry_details from anon, authenticated;
grant select on public.journal_entry_details to anon, authenticated;
