-- What clients call to write and read entries (RPC through PostgREST, and /api/journal):
-- atomic create/update of metadata with content, the visibility feed, aggregates and the
-- mention index. Every function runs as the caller (security invoker): RLS decides.

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

-- PUT /api/journal/:id: a partial update; keys absent from the patch keep their values.
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
    raise exception 'entry not found' using errcode = 'P0002';
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
 * GET /api/journal (scope own) and ?scope=visible: one page, newest first, after an
 * optional (before_created_at, before_id) cursor. The visible feed is a UNION ALL of four
 * branches (own, my teams, my organizations, public; for super admins: own, everyone else's),
 * each read newest-first from its own
 * index and limited to the page size, so the planner keeps a fast plan; the tables'
 * policies still apply to every row of every branch. The cursor is an index condition
 * (no cursor: after 'infinity').
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
language sql stable
-- No SET clauses and a single query: the function is inlined into the caller's statement
-- (PostgREST's prepared statement caches the plan). Every name is schema-qualified.
as $$
  with params as (
    select (select auth.uid()) as me,
           private.is_super_admin() as admin,
           -- No cursor: start after the newest possible entry (keeps the cursor an index condition).
           coalesce(before_created_at, 'infinity'::timestamptz) as cursor_at,
           coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid) as cursor_id,
           least(greatest(coalesce(page_size, 50), 1), 200) as n,
           '%' || replace(replace(replace(search, '\', '\\'), '%', '\%'), '_', '\_') || '%' as pattern
  ),
  candidates as (
    (select e.* from public.journal_entries e, params
      where e.user_id = params.me
        and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
        and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
        and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
        and (journal_feed.mood is null or e.mood = journal_feed.mood)
        and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
        and (journal_feed.search is null or e.title ilike params.pattern or exists (
              select 1 from public.journal_entry_contents c where c.entry_id = e.id and c.content ilike params.pattern))
        and e.created_at <= (select cursor_at from params) and (e.created_at < (select cursor_at from params) or e.id < (select cursor_id from params))
      order by e.created_at desc, e.id desc limit (select n from params))
    union all
    (select e.*
       from (select private.my_team_ids() as tid) t
       cross join params
       cross join lateral (
         select e.* from public.journal_entries e
          where journal_feed.scope = 'visible' and journal_feed.org_id is null and not (select admin from params)
            and e.meta_scope = 'team' and e.meta_scope_id = t.tid and e.user_id <> params.me
            and (journal_feed.team_id is null or t.tid = journal_feed.team_id)
            and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
            and (journal_feed.mood is null or e.mood = journal_feed.mood)
            and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
            and (journal_feed.search is null or e.title ilike params.pattern or exists (
                  select 1 from public.journal_entry_contents c where c.entry_id = e.id and c.content ilike params.pattern))
            and e.created_at <= (select cursor_at from params) and (e.created_at < (select cursor_at from params) or e.id < (select cursor_id from params))
          order by e.created_at desc, e.id desc limit (select n from params)) e)
    union all
    (select e.*
       from (select private.my_org_ids() as oid) o
       cross join params
       cross join lateral (
         select e.* from public.journal_entries e
          where journal_feed.scope = 'visible' and journal_feed.team_id is null and not (select admin from params)
            and e.meta_scope = 'org' and e.meta_scope_id = o.oid and e.user_id <> params.me
            and (journal_feed.org_id is null or o.oid = journal_feed.org_id)
            and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
            and (journal_feed.mood is null or e.mood = journal_feed.mood)
            and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
            and (journal_feed.search is null or e.title ilike params.pattern or exists (
                  select 1 from public.journal_entry_contents c where c.entry_id = e.id and c.content ilike params.pattern))
            and e.created_at <= (select cursor_at from params) and (e.created_at < (select cursor_at from params) or e.id < (select cursor_id from params))
          order by e.created_at desc, e.id desc limit (select n from params)) e)
    union all
    (select e.* from public.journal_entries e, params
      where journal_feed.scope = 'visible' and journal_feed.team_id is null and journal_feed.org_id is null
        and not (select admin from params) and e.meta_scope = 'public' and e.user_id <> params.me
        and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
        and (journal_feed.mood is null or e.mood = journal_feed.mood)
        and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
        and (journal_feed.search is null or e.title ilike params.pattern or exists (
              select 1 from public.journal_entry_contents c where c.entry_id = e.id and c.content ilike params.pattern))
        and e.created_at <= (select cursor_at from params) and (e.created_at < (select cursor_at from params) or e.id < (select cursor_id from params))
      order by e.created_at desc, e.id desc limit (select n from params))
    union all
    -- Super admins may see every entry (rule 6): one branch over all others' entries.
    (select e.* from public.journal_entries e, params
      where journal_feed.scope = 'visible' and (select admin from params) and e.user_id <> params.me
        and (journal_feed.team_id is null or (e.meta_scope = 'team' and e.meta_scope_id = journal_feed.team_id))
        and (journal_feed.org_id is null or (e.meta_scope = 'org' and e.meta_scope_id = journal_feed.org_id))
        and (journal_feed.notebook_id is null or e.notebook_id = journal_feed.notebook_id)
        and (journal_feed.mood is null or e.mood = journal_feed.mood)
        and (journal_feed.tag is null or e.tags @> array[journal_feed.tag])
        and (journal_feed.search is null or e.title ilike params.pattern or exists (
              select 1 from public.journal_entry_contents c where c.entry_id = e.id and c.content ilike params.pattern))
        and e.created_at <= (select cursor_at from params) and (e.created_at < (select cursor_at from params) or e.id < (select cursor_id from params))
      order by e.created_at desc, e.id desc limit (select n from params))
  ),
  page as (
    select * from candidates order by created_at desc, id desc limit (select n from params)
  )
  -- The page's rows passed the entries policy in their branch; the content joins under its own.
  select p.id, p.user_id, p.notebook_id, p.title, c.content, c.entry_id is null, p.mood, p.tags,
         p.metadata_visibility, p.content_visibility, p.team_id, p.org_id, p.music_track_id,
         p.created_at, p.updated_at
    from page p left join public.journal_entry_contents c on c.entry_id = p.id
   order by p.created_at desc, p.id desc
$$;

comment on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer) is
  'A page of entries the caller may see (scope own or visible), filterable, newest first, keyset-paginated.';
grant execute on function public.journal_feed(text, uuid, uuid, uuid, text, text, text, timestamptz, uuid, integer)
  to authenticated;

-- GET /api/journal/stats: counts, tags and moods over the entries the caller may see.
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
grant execute on function public.journal_stats(text) to authenticated;

-- ---------------------------------------------------------------------------------------
-- Mentions: `@[Name](<user uuid>)` in an entry's text. Derived from content, so readable
-- exactly where the content is.

create table public.journal_entry_mentions (
  entry_id uuid not null references public.journal_entries (id) on delete cascade,
  mentioned_user_id uuid not null references public.profiles (id) on delete cascade,
  primary key (entry_id, mentioned_user_id)
);
comment on table public.journal_entry_mentions is 'Users mentioned in an entry''s text (@[Name](uuid)); visible where the content is.';
create index journal_entry_mentions_user on public.journal_entry_mentions (mentioned_user_id);

alter table public.journal_entry_mentions enable row level security;
revoke all on public.journal_entry_mentions from anon, authenticated;
grant select on public.journal_entry_mentions to authenticated;
create policy "journal_entry_mentions: visible where the content is" on public.journal_entry_mentions
  for select to authenticated
  using (exists (select 1 from public.journal_entry_contents c where c.entry_id = journal_entry_mentions.entry_id));

alter table public.journal_entry_contents add column mentions_indexed_at timestamptz;
comment on column public.journal_entry_contents.mentions_indexed_at is
  'When the mentions of this text were indexed; null for text written before the index existed (see backfill_mentions).';

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

-- POST /api/journal/backfill-mentions: indexes one batch of the caller's unindexed texts and
-- says how many remain. Idempotent; repeat until it returns 0.
create or replace function public.backfill_mentions(batch_size integer default 200) returns integer
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
grant execute on function public.backfill_mentions(integer) to authenticated;

-- PostgREST runs the feed as a prepared statement with a generic plan, whose cost estimate
-- can pass jit_above_cost: compiling it then takes seconds for a query that runs in a
-- millisecond. No API query here benefits from JIT, so the API roles go without it
-- (PostgREST applies role settings to each request; `notify pgrst` reloads them).
alter role authenticated set jit = off;
alter role anon set jit = off;
notify pgrst, 'reload schema';
