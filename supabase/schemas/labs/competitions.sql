-- =============================================================================================
-- Labs: competitions
-- =============================================================================================
-- Competitions scored from recorded activity events (routes/labs/competitions.ts).
-- The area's overview: labs/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Competitions
-- ---------------------------------------------------------------------------------------------

-- Competition weights: integers from 0 to 1000 (a larger one overflowed the recompute's
-- integer arithmetic for every competition).
create or replace function private.labs_valid_scoring_config(config jsonb) returns boolean
language sql immutable
set search_path = ''
as $$
  select jsonb_typeof(config) = 'object'
     and config - array['clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build'] = '{}'::jsonb
     and not exists (select 1 from jsonb_each(config) w
                      where jsonb_typeof(w.value) <> 'number' or (w.value #>> '{}')::numeric not between 0 and 1000
                         or (w.value #>> '{}')::numeric <> trunc((w.value #>> '{}')::numeric))
$$;
grant execute on function private.labs_valid_scoring_config(jsonb) to authenticated, service_role;

create table public.labs_competitions (
  id uuid primary key default gen_random_uuid(),
  slug text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,79}$'),
  title text not null check (char_length(title) between 1 and 200),
  is_active boolean not null default true,
  entry_open boolean not null default true,
  starts_at timestamptz not null default now(),
  ends_at timestamptz,
  last_scored_at timestamptz,
  scoring_config jsonb not null
    default '{"clone": 1, "completion": 5, "replication_confirmed": 25, "replication_refuted": 5, "build": 10}'::jsonb
    check (private.labs_valid_scoring_config(scoring_config)),
  created_at timestamptz not null default now(),
  constraint labs_competitions_window check (ends_at is null or ends_at > starts_at)
);
alter table public.labs_competitions enable row level security;
comment on table public.labs_competitions is
  'Labs competitions: participants score their activity events between starts_at and ends_at by scoring_config''s weights.';
revoke all on public.labs_competitions from anon, authenticated, service_role;
grant select on public.labs_competitions to anon, authenticated, service_role;

create policy "labs_competitions: anyone reads active ones" on public.labs_competitions
  for select to anon using (is_active);

create policy "labs_competitions: active ones, or all for super admins" on public.labs_competitions
  for select to authenticated using (is_active or (select private.is_super_admin()));

create table public.labs_competition_participants (
  competition_id uuid not null references public.labs_competitions (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  joined_at timestamptz not null default now(),
  score integer not null default 0,
  primary key (competition_id, user_id)
);
alter table public.labs_competition_participants enable row level security;
comment on table public.labs_competition_participants is
  'Who entered which competition, with the score of the last recompute. Participants read their own rows; '
  'the leaderboard RPC shows the ranking.';
revoke all on public.labs_competition_participants from anon, authenticated, service_role;
grant select on public.labs_competition_participants to authenticated, service_role;

create index labs_competition_participants_user on public.labs_competition_participants (user_id);

create index labs_competition_participants_ranking on public.labs_competition_participants (competition_id, score desc, joined_at, user_id);

create policy "labs_competition_participants: own or super admin" on public.labs_competition_participants
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Creates a competition (super admins); weights are integers from 0 to 1000.
create or replace function private.labs_create_competition(
  slug text, title text, starts_at timestamptz default null, ends_at timestamptz default null, scoring_config jsonb default null
) returns public.labs_competitions
language plpgsql security definer
set search_path = ''
as $$
declare
  c public.labs_competitions;
  k text;
begin
  perform private.require_trusted_caller('create competitions');
  if slug is null or slug !~ '^[a-z0-9][a-z0-9-]{0,79}$' then
    raise exception 'slug: lower-case letters, digits and dashes (at most 80)' using errcode = '22023';
  end if;
  if ends_at <= coalesce(starts_at, now()) then
    raise exception 'ends_at: must be after starts_at' using errcode = '22023';
  end if;
  if scoring_config is not null then
    if jsonb_typeof(scoring_config) <> 'object' then
      raise exception 'scoring_config: an object of weights' using errcode = '22023';
    end if;
    for k in select jsonb_object_keys(scoring_config) loop
      if k not in ('clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build') then
        raise exception 'scoring_config.%: not a scored activity', k using errcode = '22023';
      end if;
      if jsonb_typeof(scoring_config -> k) <> 'number' or (scoring_config ->> k)::numeric <> trunc((scoring_config ->> k)::numeric)
         or (scoring_config ->> k)::numeric not between 0 and 1000 then
        raise exception 'scoring_config.%: an integer weight from 0 to 1000', k using errcode = '22023';
      end if;
    end loop;
  end if;
  insert into public.labs_competitions (slug, title, starts_at, ends_at, scoring_config)
  values (slug, private.required_text(title, 'title', 200), coalesce(starts_at, now()), ends_at,
          '{"clone": 1, "completion": 5, "replication_confirmed": 25, "replication_refuted": 5, "build": 10}'::jsonb
            || coalesce(scoring_config, '{}'::jsonb))
  returning * into c;
  return c;
exception when unique_violation then
  raise exception 'slug: a competition % already exists', slug using errcode = '23505';
end
$$;
grant execute on function private.labs_create_competition(text,text,timestamp with time zone,timestamp with time zone,jsonb) to authenticated, service_role;

create or replace function public.labs_create_competition(
  slug text, title text, starts_at timestamptz default null, ends_at timestamptz default null, scoring_config jsonb default null
) returns public.labs_competitions
language sql security invoker
set search_path = ''
as $$ select * from private.labs_create_competition(slug, title, starts_at, ends_at, scoring_config) $$;
grant execute on function labs_create_competition(text,text,timestamp with time zone,timestamp with time zone,jsonb) to authenticated, service_role;

-- Super admins: opens or closes a competition or its entries.
create or replace function private.labs_update_competition(slug text, is_active boolean default null, entry_open boolean default null)
returns public.labs_competitions
language plpgsql security definer
set search_path = ''
as $$
declare
  c public.labs_competitions;
begin
  perform private.require_trusted_caller('change competitions');
  update public.labs_competitions k
     set is_active = coalesce(labs_update_competition.is_active, k.is_active),
         entry_open = coalesce(labs_update_competition.entry_open, k.entry_open)
   where k.slug = labs_update_competition.slug
  returning * into c;
  if c.id is null then
    raise exception 'no competition %', slug using errcode = 'PT404';
  end if;
  return c;
end
$$;
grant execute on function private.labs_update_competition(text,boolean,boolean) to authenticated, service_role;

create or replace function public.labs_update_competition(slug text, is_active boolean default null, entry_open boolean default null)
returns public.labs_competitions
language sql security invoker
set search_path = ''
as $$ select * from private.labs_update_competition(slug, is_active, entry_open) $$;
grant execute on function labs_update_competition(text,boolean,boolean) to authenticated, service_role;

-- Joins the caller to an active competition open for entries (once).
create or replace function private.labs_join_competition(slug text) returns public.labs_competition_participants
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_competitions;
  p public.labs_competition_participants;
begin
  select * into c from public.labs_competitions k where k.slug = labs_join_competition.slug and k.is_active;
  if c.id is null then
    raise exception 'no competition %', slug using errcode = 'PT404';
  end if;
  if not c.entry_open then
    raise exception 'entries to % are closed', slug using errcode = 'PT409';
  end if;
  insert into public.labs_competition_participants (competition_id, user_id) values (c.id, me)
  on conflict (competition_id, user_id) do nothing;
  select * into p from public.labs_competition_participants x where x.competition_id = c.id and x.user_id = me;
  return p;
end
$$;
grant execute on function private.labs_join_competition(text) to authenticated;

create or replace function public.labs_join_competition(slug text) returns public.labs_competition_participants
language sql security invoker
set search_path = ''
as $$ select * from private.labs_join_competition(slug) $$;
grant execute on function labs_join_competition(text) to authenticated, service_role;

-- Rescore every active, open competition in one statement per run: each participant's score
-- is the weighted count of their activity events inside the competition's window. Concurrent
-- runs queue on the competition rows (same result either way).
create or replace function private.labs_recompute_competitions()
returns table (slug text, participants integer, scored_at timestamptz)
language plpgsql security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('recompute competitions');
  perform 1 from public.labs_competitions c where c.is_active and c.entry_open order by c.id for update;
  with scores as (
    select p.competition_id, p.user_id,
           coalesce(sum(coalesce((c.scoring_config ->> e.kind)::integer, 0)), 0)::integer as score
      from public.labs_competition_participants p
      join public.labs_competitions c on c.id = p.competition_id and c.is_active and c.entry_open
      left join public.labs_activity_events e
        on e.user_id = p.user_id and e.created_at >= c.starts_at and (c.ends_at is null or e.created_at < c.ends_at)
     group by p.competition_id, p.user_id
  )
  update public.labs_competition_participants p set score = s.score
    from scores s
   where p.competition_id = s.competition_id and p.user_id = s.user_id and p.score <> s.score;
  return query
    with stamped as (
      update public.labs_competitions c set last_scored_at = now()
       where c.is_active and c.entry_open
      returning c.id, c.slug, c.last_scored_at
    )
    select s.slug, (select count(*)::integer from public.labs_competition_participants p where p.competition_id = s.id), s.last_scored_at
      from stamped s order by s.slug;
end
$$;
comment on function private.labs_recompute_competitions() is
  'The recompute-competitions job: rescores every active, open competition and sets last_scored_at.';
grant execute on function private.labs_recompute_competitions() to authenticated, service_role;

create or replace function public.labs_recompute_competitions()
returns table (slug text, participants integer, scored_at timestamptz)
language sql security invoker
set search_path = ''
as $$ select * from private.labs_recompute_competitions() $$;
grant execute on function labs_recompute_competitions() to authenticated, service_role;

-- The leaderboard (default 50, SPEC Limits): rank, participant and score as last computed.
create or replace function private.labs_leaderboard(slug text, page_size integer default 50)
returns table (rank bigint, user_id uuid, full_name text, score integer, joined_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  c public.labs_competitions;
begin
  select * into c from public.labs_competitions k
   where k.slug = labs_leaderboard.slug and (k.is_active or private.is_super_admin());
  if c.id is null then
    raise exception 'no competition %', slug using errcode = 'PT404';
  end if;
  return query
    select rank() over (order by p.score desc), p.user_id, pr.full_name, p.score, p.joined_at
      from public.labs_competition_participants p join public.profiles pr on pr.id = p.user_id
     where p.competition_id = c.id
     order by p.score desc, p.joined_at, p.user_id
     limit least(greatest(coalesce(page_size, 50), 1), 100);
end
$$;
grant execute on function private.labs_leaderboard(text,integer) to authenticated, service_role;

create or replace function public.labs_leaderboard(slug text, page_size integer default 50)
returns table (rank bigint, user_id uuid, full_name text, score integer, joined_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_leaderboard(slug, page_size) $$;
grant execute on function labs_leaderboard(text,integer) to authenticated, service_role;
