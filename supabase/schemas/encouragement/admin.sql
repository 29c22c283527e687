-- =============================================================================================
-- Encouragement drops: configuration and templates
-- =============================================================================================
-- What super admins set (routes/encouragement/admin.ts). The area's overview: encouragement/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Configuration: one row, SPEC's defaults; every change recorded.
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_config (
  id boolean primary key default true check (id),
  daily_allowance integer not null default 5 check (daily_allowance between 1 and 100),
  bonus_per_engagement integer not null default 2 check (bonus_per_engagement between 1 and 100),
  engagement_window_hours integer not null default 24 check (engagement_window_hours between 1 and 168),
  max_custom_per_day integer not null default 3 check (max_custom_per_day between 1 and 100),
  updated_at timestamptz not null default now(),
  updated_by uuid
);
alter table public.encouragement_config enable row level security;
comment on table public.encouragement_config is
  'The single encouragement-drop configuration row (SPEC defaults: allowance 5, bonus 2, window 24 h, custom 3). Changed only through update_encouragement_config.';
revoke all on public.encouragement_config from anon, authenticated, service_role;
grant select on public.encouragement_config to authenticated, service_role;

create policy "encouragement_config: signed-in users read" on public.encouragement_config
  for select to authenticated using (true);

create table public.encouragement_config_changes (
  id bigint generated always as identity primary key,
  changed_by uuid references public.profiles (id) on delete set null,
  changed_at timestamptz not null default now(),
  old_values jsonb not null,
  new_values jsonb not null
);
alter table public.encouragement_config_changes enable row level security;
comment on table public.encouragement_config_changes is 'Every configuration change: who, when, before and after.';
revoke all on public.encouragement_config_changes from anon, authenticated, service_role;
grant select on public.encouragement_config_changes to authenticated, service_role;

create index encouragement_config_changes_by on public.encouragement_config_changes (changed_by);

create policy "encouragement_config_changes: super admins read" on public.encouragement_config_changes
  for select to authenticated using ((select private.is_super_admin()));

-- Super admins: changes some settings of the one configuration row (bounded integers); the
-- change is recorded.
create or replace function private.update_encouragement_config(patch jsonb) returns public.encouragement_config
language plpgsql security definer
set search_path = ''
as $$
declare
  before public.encouragement_config;
  after public.encouragement_config;
  key text;
  value jsonb;
  bounds constant jsonb := '{"daily_allowance": 100, "bonus_per_engagement": 100, "engagement_window_hours": 168, "max_custom_per_day": 100}'::jsonb;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may change the configuration' using errcode = '42501';
  end if;
  if patch is null or jsonb_typeof(patch) <> 'object' or patch = '{}'::jsonb then
    raise exception 'body: name at least one of %', (select string_agg(k, ', ') from jsonb_object_keys(bounds) k)
      using errcode = '22023';
  end if;
  for key, value in select * from jsonb_each(patch) loop
    if not bounds ? key then
      raise exception '%: not an accepted field', key using errcode = '22023';
    end if;
    if jsonb_typeof(value) <> 'number' or value::numeric <> trunc(value::numeric)
       or value::numeric < 1 or value::numeric > (bounds ->> key)::numeric then
      raise exception '%: must be an integer between 1 and %', key, bounds ->> key using errcode = '22023';
    end if;
  end loop;
  select * into before from public.encouragement_config for update;
  update public.encouragement_config c set
    daily_allowance = coalesce((patch ->> 'daily_allowance')::integer, c.daily_allowance),
    bonus_per_engagement = coalesce((patch ->> 'bonus_per_engagement')::integer, c.bonus_per_engagement),
    engagement_window_hours = coalesce((patch ->> 'engagement_window_hours')::integer, c.engagement_window_hours),
    max_custom_per_day = coalesce((patch ->> 'max_custom_per_day')::integer, c.max_custom_per_day),
    updated_at = now(),
    updated_by = (select auth.uid())
  returning * into after;
  insert into public.encouragement_config_changes (changed_by, old_values, new_values)
  values ((select auth.uid()),
          to_jsonb(before) - array['id', 'updated_at', 'updated_by'],
          to_jsonb(after) - array['id', 'updated_at', 'updated_by']);
  return after;
end
$$;
grant execute on function private.update_encouragement_config(jsonb) to authenticated, service_role;

create or replace function public.update_encouragement_config(patch jsonb) returns public.encouragement_config
language sql
set search_path = ''
as $$ select private.update_encouragement_config(patch) $$;
comment on function public.update_encouragement_config(jsonb) is
  'Super admins: change some of daily_allowance, bonus_per_engagement, engagement_window_hours, max_custom_per_day (integers, bounded); the change is recorded.';
grant execute on function update_encouragement_config(jsonb) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------------
-- Templates
-- ---------------------------------------------------------------------------------------------

create table public.encouragement_templates (
  id uuid primary key default gen_random_uuid(),
  type text not null check (type in ('encouragement', 'media', 'science_tidbit')),
  title text not null check (char_length(btrim(title)) between 1 and 200),
  content text not null check (char_length(btrim(content)) between 1 and 2000),
  media_type text check (media_type in ('image', 'video', 'audio', 'link')),
  thumbnail_url text check (char_length(thumbnail_url) <= 2048 and thumbnail_url ~* '^https?://'),
  is_approved boolean not null default false,
  usage_count integer not null default 0 check (usage_count >= 0),
  created_by uuid references public.profiles (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint encouragement_templates_media_type_required check ((type = 'media') = (media_type is not null)),
  constraint encouragement_templates_thumbnail_only_media check (type = 'media' or thumbnail_url is null)
);
alter table public.encouragement_templates enable row level security;
comment on table public.encouragement_templates is
  'Ready-made drops. Users see approved ones; super admins manage all. usage_count rises with each send.';
revoke all on public.encouragement_templates from anon, authenticated, service_role;
grant select, delete on public.encouragement_templates to authenticated;
grant select on public.encouragement_templates to service_role;
grant insert (type, title, content, media_type, thumbnail_url, is_approved), update (type, title, content, media_type, thumbnail_url, is_approved)
  on public.encouragement_templates to authenticated;

create index encouragement_templates_by_type on public.encouragement_templates (type, created_at desc) where is_approved;

create index encouragement_templates_created_by on public.encouragement_templates (created_by);

create policy "encouragement_templates: approved ones, or all for super admins" on public.encouragement_templates
  for select to authenticated using (is_approved or (select private.is_super_admin()));

create policy "encouragement_templates: super admins create" on public.encouragement_templates
  for insert to authenticated with check ((select private.is_super_admin()));

create policy "encouragement_templates: super admins update" on public.encouragement_templates
  for update to authenticated using ((select private.is_super_admin())) with check ((select private.is_super_admin()));

create policy "encouragement_templates: super admins delete" on public.encouragement_templates
  for delete to authenticated using ((select private.is_super_admin()));

-- Keeps a template's created_by, created_at and updated_at; clients cannot set them.
create or replace function private.stamp_encouragement_template() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    new.created_by := (select auth.uid());
    new.created_at := now();
  end if;
  new.updated_at := now();
  return new;
end
$$;

create trigger encouragement_templates_stamp before insert or update on public.encouragement_templates
  for each row execute function private.stamp_encouragement_template();

-- The columns' rules in words, as /api's template routes say them (conventions.sql, "Field
-- rules in words").
create or replace function private.check_encouragement_template_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('type', new.type);
  perform private.check_one_of('type', new.type, array['encouragement', 'media', 'science_tidbit']);
  perform private.check_required('title', new.title);
  perform private.check_length('title', btrim(new.title), 200);
  perform private.check_required('content', new.content);
  perform private.check_length('content', btrim(new.content), 2000);
  perform private.check_one_of('media_type', new.media_type, array['image', 'video', 'audio', 'link']);
  perform private.check_url('thumbnail_url', new.thumbnail_url, 2048);
  if new.type = 'media' and new.media_type is null then
    raise exception 'media_type: required for media templates' using errcode = '23514';
  end if;
  if new.type <> 'media' and (new.media_type is not null or new.thumbnail_url is not null) then
    raise exception '%: only for media templates', case when new.media_type is not null then 'media_type' else 'thumbnail_url' end
      using errcode = '23514';
  end if;
  perform private.check_required('is_approved', new.is_approved);
  return new;
end
$$;
create trigger encouragement_templates_check_fields
  before insert or update of type, title, content, media_type, thumbnail_url, is_approved on public.encouragement_templates
  for each row execute function private.check_encouragement_template_fields();
