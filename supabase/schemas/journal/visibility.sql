-- =============================================================================================
-- Journal: visibility
-- =============================================================================================
-- The journal gate, the derived scopes and their checks, leaving a group, and the policies
-- (who reads what). The area's overview: journal/tables.sql.

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
    raise exception 'team_id: required when a visibility is team' using errcode = '23514', hint = 'team_id_required';
  end if;
  if check_levels.org_id is null and 'org' in (check_levels.metadata_visibility, check_levels.content_visibility) then
    raise exception 'org_id: required when a visibility is org' using errcode = '23514', hint = 'org_id_required';
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

-- Editing the text touches the entry's updated_at, unless this transaction changed the entry
-- and its updated_at already (a title and text written together): no second update of the row.
create or replace function private.touch_entry_on_content() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if new.content is distinct from old.content then
    update public.journal_entries set updated_at = now()
     where id = new.entry_id and (updated_at <> now() or row_version <> pg_catalog.pg_current_xact_id());
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
