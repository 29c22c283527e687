-- =============================================================================================
-- AI usage and cost
-- =============================================================================================
-- Every billed provider call is one append-only row in public.ai_usage whose cost is computed
-- here from an effective-dated price table; a statement trigger keeps the per-user
-- calendar-month (UTC) aggregate in the same transaction. Per-user daily caps are claimed
-- before each call. Also here: tokens-to-drops conversion rates, tone analysis on the entry
-- path (which mood came from the analyzer) and the entries' generated backgrounds.
--
-- For other areas:
--   public.record_ai_usage(user_id, usage_type, model, input_tokens, output_tokens,
--     image_count, image_quality, entry_id, pack_id) records one billed call for any user;
--     the cost (usd) comes from public.ai_prices at the row's created_at. service_role only
--     (functions/_shared/ai_usage.ts wraps it). Unknown usage_type: 22023; unknown user: PT404.
--   public.claim_ai_calls(usage_type, wanted, daily_cap) claims calls against the CALLER's
--     daily cap before the provider is called (granted 0: answer 429);
--     public.release_ai_calls gives back calls the provider did not bill.
--   private.ai_usage_types lists the known usage types with their category and daily cap;
--     its rows (and the prices in public.ai_prices) are data, added by migrations. A model
--     without a price row is recorded at cost 0 (self-hosted servers cost nothing per call).

-- ---------------------------------------------------------------------------------------------
-- Usage types and prices
-- ---------------------------------------------------------------------------------------------

-- The known usage types; a new category appears in monthly_token_usage's breakdown
-- (zero-filled for everyone).
create table private.ai_usage_types (
  usage_type text primary key check (usage_type ~ '^[a-z][a-z0-9_]{0,39}$'),
  category text not null check (char_length(category) between 1 and 40),
  daily_cap_per_user integer check (daily_cap_per_user >= 0)
);
comment on table private.ai_usage_types is
  'Known AI usage types, the breakdown category of each (SPEC: Tone, Images, Packs) and the per-user daily cap (null: none).';

-- Prices: effective-dated, append-only. A cost is computed once, when its usage row is
-- written, with the prices effective at that moment, so a new price never rewrites the past.
create table public.ai_prices (
  id bigint generated always as identity primary key,
  model text not null check (char_length(model) between 1 and 100),
  unit text not null check (unit in ('input_1m_tokens', 'output_1m_tokens', 'image_standard', 'image_hd')),
  usd_per_unit numeric(14, 6) not null check (usd_per_unit >= 0),
  effective_at timestamptz not null default now(),
  created_by uuid,
  created_at timestamptz not null default now(),
  constraint ai_prices_one_per_moment unique (model, unit, effective_at)
);
alter table public.ai_prices enable row level security;
comment on table public.ai_prices is
  'AI prices in USD: per million input/output tokens, or per standard/HD image. The newest row effective at a call''s time applies; rows are never changed.';
comment on column public.ai_prices.usd_per_unit is 'USD per million tokens (token units) or per image (image units).';
revoke all on public.ai_prices from anon, authenticated, service_role;
grant select on public.ai_prices to authenticated, service_role;
grant insert (model, unit, usd_per_unit, effective_at)
  on public.ai_prices to authenticated;
create policy "ai_prices: super admins read" on public.ai_prices
  for select to authenticated using ((select private.is_super_admin()));
create policy "ai_prices: super admins add prices" on public.ai_prices
  for insert to authenticated with check ((select private.is_super_admin()));

-- New prices and rates take effect now or later, never in the past (a minute of clock skew is
-- read as now), and record who set them. Shared by ai_prices and token_conversion_rates.
create or replace function private.stamp_effective_row() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  -- The one change allowed: the setter's id becomes their account deletion's tombstone.
  if tg_op = 'UPDATE' then
    if private.only_tombstones_changed(to_jsonb(old), to_jsonb(new), array['created_by']) then
      return new;
    end if;
  end if;
  if tg_op = 'UPDATE' or tg_op = 'DELETE' then
    raise exception '% is append-only: add a new row instead', tg_table_name using errcode = '42501';
  end if;
  new.effective_at := coalesce(new.effective_at, now());
  if new.effective_at < now() - interval '1 minute' then
    raise exception 'effective_at: must not be in the past' using errcode = '22023';
  end if;
  new.effective_at := greatest(new.effective_at, now());
  new.created_at := now();
  new.created_by := (select auth.uid());
  return new;
end
$$;
create trigger ai_prices_stamp before insert or update or delete on public.ai_prices
  for each row execute function private.stamp_effective_row();

-- A new price's rules in words, as the admin routes say them (conventions.sql, "Field rules in
-- words"); updates are refused by ai_prices_stamp.
create or replace function private.check_ai_price_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('model', new.model);
  perform private.check_length('model', new.model, 100);
  perform private.check_required('unit', new.unit);
  perform private.check_one_of('unit', new.unit, array['input_1m_tokens', 'output_1m_tokens', 'image_standard', 'image_hd']);
  perform private.check_required('usd_per_unit', new.usd_per_unit);
  perform private.check_between('usd_per_unit', new.usd_per_unit, 0, null);
  return new;
end
$$;
create trigger ai_prices_check_fields before insert on public.ai_prices
  for each row execute function private.check_ai_price_fields();

-- The price of one unit of a model at a moment (null: none).
create or replace function private.ai_price(model text, unit text, at timestamptz) returns numeric
language sql stable
set search_path = ''
as $$
  select p.usd_per_unit from public.ai_prices p
   where p.model = $1 and p.unit = $2 and p.effective_at <= $3
   order by p.effective_at desc
   limit 1
$$;
-- What a call cost: tokens at their per-million prices plus images at their per-image price.
create or replace function private.ai_cost(
  model text, input_tokens bigint, output_tokens bigint, image_count integer, image_quality text, at timestamptz
) returns numeric
language sql stable
set search_path = ''
as $$
  select coalesce($2 * private.ai_price($1, 'input_1m_tokens', $6) / 1000000, 0)
       + coalesce($3 * private.ai_price($1, 'output_1m_tokens', $6) / 1000000, 0)
       + coalesce($4 * private.ai_price($1, 'image_' || coalesce($5, 'standard'), $6), 0)
$$;

-- ---------------------------------------------------------------------------------------------
-- Usage rows and the monthly aggregate
-- ---------------------------------------------------------------------------------------------

-- Append-only, one row per billed provider call.
create table public.ai_usage (
  id bigint generated always as identity primary key,
  user_id uuid not null references public.profiles (id) on delete cascade,
  usage_type text not null check (usage_type ~ '^[a-z][a-z0-9_]{0,39}$'),
  model text not null check (char_length(model) between 1 and 100),
  input_tokens integer not null default 0 check (input_tokens >= 0),
  output_tokens integer not null default 0 check (output_tokens >= 0),
  image_count integer not null default 0 check (image_count >= 0),
  image_quality text check (image_quality in ('standard', 'hd')),
  cost_usd numeric(20, 10) not null default 0 check (cost_usd >= 0),
  entry_id uuid,
  pack_id uuid,
  created_at timestamptz not null default now()
);
alter table public.ai_usage enable row level security;
comment on table public.ai_usage is
  'One row per billed AI provider call (failed calls the provider billed included). cost_usd is computed in SQL from ai_prices when the row is written. Append-only.';
comment on column public.ai_usage.entry_id is 'The journal entry the call was for; kept (no foreign key) after the entry is deleted.';
comment on column public.ai_usage.pack_id is 'The tone pack the call was for; kept (no foreign key) after the pack is deleted.';
revoke all on public.ai_usage from anon, authenticated, service_role;
grant select on public.ai_usage to authenticated, service_role;
create index ai_usage_user_history on public.ai_usage (user_id, created_at desc, id desc);
create policy "ai_usage: owners and super admins read" on public.ai_usage
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- The cost and the type are decided here, whatever the writer sent.
create or replace function private.price_ai_usage() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if not exists (select 1 from private.ai_usage_types t where t.usage_type = new.usage_type) then
    raise exception 'usage_type: unknown type %', new.usage_type using errcode = '22023';
  end if;
  new.created_at := coalesce(new.created_at, now());
  if new.image_count > 0 then
    new.image_quality := coalesce(new.image_quality, 'standard');
  end if;
  new.cost_usd := private.ai_cost(new.model, new.input_tokens, new.output_tokens, new.image_count,
                                  new.image_quality, new.created_at);
  return new;
end
$$;
create trigger ai_usage_price before insert on public.ai_usage
  for each row execute function private.price_ai_usage();

-- ai_usage is append-only: updates and deletes are refused, except the cascade when a user is
-- deleted and the retention job's purge of expired rows.
create or replace function private.forbid_usage_changes() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  -- Deleting a user cascades to their rows: allowed once their profile is gone.
  if tg_op = 'DELETE' and not exists (select 1 from public.profiles where id = old.user_id) then
    return old;
  end if;
  -- The retention job's purge of expired rows (retention.sql; the monthly sums stay).
  if tg_op = 'DELETE' and current_setting('app.purging_expired', true) = 'on' then
    return old;
  end if;
  raise exception '% is append-only', tg_table_name using errcode = '42501';
end
$$;
create trigger ai_usage_append_only before update or delete on public.ai_usage
  for each row execute function private.forbid_usage_changes();
create trigger ai_usage_no_truncate before truncate on public.ai_usage
  for each statement execute function private.forbid_usage_changes();

-- One row per user, calendar month (UTC) and type, kept by a statement trigger in the
-- inserting transaction. Reads of a month never touch ai_usage.
create table public.ai_usage_monthly (
  user_id uuid not null references public.profiles (id) on delete cascade,
  month date not null check (extract(day from month) = 1),
  usage_type text not null,
  calls integer not null default 0,
  input_tokens bigint not null default 0,
  output_tokens bigint not null default 0,
  image_count integer not null default 0,
  cost_usd numeric(20, 10) not null default 0,
  primary key (user_id, month, usage_type)
);
alter table public.ai_usage_monthly enable row level security;
comment on table public.ai_usage_monthly is
  'Sums of ai_usage per user, calendar month (UTC, first day) and type; maintained by a trigger on ai_usage in the same transaction.';
revoke all on public.ai_usage_monthly from anon, authenticated, service_role;
grant select on public.ai_usage_monthly to authenticated, service_role;
create policy "ai_usage_monthly: owners and super admins read" on public.ai_usage_monthly
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- After each insert statement on ai_usage: adds the new calls to the monthly aggregates
-- (ai_usage_monthly).
create or replace function private.add_usage_to_months() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  -- In key order, so concurrent statements lock the aggregate rows in the same order.
  insert into public.ai_usage_monthly as m
         (user_id, month, usage_type, calls, input_tokens, output_tokens, image_count, cost_usd)
  select n.user_id, date_trunc('month', n.created_at at time zone 'UTC')::date, n.usage_type,
         count(*), sum(n.input_tokens), sum(n.output_tokens), sum(n.image_count), sum(n.cost_usd)
    from inserted n
   group by 1, 2, 3
   order by 1, 2, 3
  on conflict (user_id, month, usage_type) do update set
    calls = m.calls + excluded.calls,
    input_tokens = m.input_tokens + excluded.input_tokens,
    output_tokens = m.output_tokens + excluded.output_tokens,
    image_count = m.image_count + excluded.image_count,
    cost_usd = m.cost_usd + excluded.cost_usd;
  return null;
end
$$;
create trigger ai_usage_add_to_months after insert on public.ai_usage
  referencing new table as inserted
  for each statement execute function private.add_usage_to_months();

-- Recording a billed call (edge functions, with the service role).
create or replace function private.record_ai_usage(
  user_id uuid, usage_type text, model text, input_tokens integer, output_tokens integer,
  image_count integer, image_quality text, entry_id uuid, pack_id uuid
) returns public.ai_usage
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.ai_usage;
begin
  if not exists (select 1 from public.profiles p where p.id = record_ai_usage.user_id) then
    raise exception 'user_id: no user %', record_ai_usage.user_id using errcode = 'PT404';
  end if;
  if coalesce(btrim(record_ai_usage.model), '') = '' then
    raise exception 'model: required' using errcode = '22023';
  end if;
  insert into public.ai_usage (user_id, usage_type, model, input_tokens, output_tokens, image_count,
                               image_quality, entry_id, pack_id)
  values (record_ai_usage.user_id, record_ai_usage.usage_type, btrim(record_ai_usage.model),
          coalesce(record_ai_usage.input_tokens, 0), coalesce(record_ai_usage.output_tokens, 0),
          coalesce(record_ai_usage.image_count, 0), record_ai_usage.image_quality,
          record_ai_usage.entry_id, record_ai_usage.pack_id)
  returning * into row;
  return row;
end
$$;
comment on function private.record_ai_usage(uuid, text, text, integer, integer, integer, text, uuid, uuid) is
  'Writes one usage row (cost computed by the ai_usage_price trigger).';
grant execute on function private.record_ai_usage(uuid, text, text, integer, integer, integer, text, uuid, uuid) to service_role;
create or replace function public.record_ai_usage(
  user_id uuid,
  usage_type text,
  model text,
  input_tokens integer default 0,
  output_tokens integer default 0,
  image_count integer default 0,
  image_quality text default null,
  entry_id uuid default null,
  pack_id uuid default null
) returns public.ai_usage
language sql
set search_path = ''
as $$
  select private.record_ai_usage($1, $2, $3, $4, $5, $6, $7, $8, $9)
$$;
comment on function public.record_ai_usage(uuid, text, text, integer, integer, integer, text, uuid, uuid) is
  'RPC for edge functions (service role only): records one billed AI call for any user; returns the row with its cost.';

-- Monthly summaries (SPEC: monthly_token_usage(user_id, year, month)).
create or replace function private.usage_summary(target_user_id uuid, month_start date) returns jsonb
language sql stable security definer
set search_path = ''
as $$
  with per_category as (
    select t.category,
           coalesce(sum(m.calls), 0) as calls,
           coalesce(sum(m.input_tokens + m.output_tokens), 0) as tokens,
           coalesce(sum(m.image_count), 0) as images,
           coalesce(sum(m.cost_usd), 0) as cost
      from private.ai_usage_types t
      left join public.ai_usage_monthly m
        on m.user_id = $1 and m.month = $2 and m.usage_type = t.usage_type
     group by t.category
  )
  select jsonb_build_object(
           'total_tokens', sum(tokens),
           'total_cost', trim_scale(sum(cost)),
           'calls', sum(calls),
           'breakdown', jsonb_object_agg(category, jsonb_build_object(
             'calls', calls, 'tokens', tokens, 'images', images, 'cost', trim_scale(cost))))
    from per_category
$$;
comment on function private.usage_summary(uuid, date) is
  'One user''s month from ai_usage_monthly: totals and the breakdown per category. No access check: callers check.';

-- A user's AI usage in a calendar month (UTC), by kind; one's own, or anyone's for super
-- admins.
create or replace function private.monthly_token_usage(target_user_id uuid, year integer, month integer) returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if target_user_id is null then
    raise exception 'user_id: required' using errcode = '22023';
  end if;
  if year is null or year not between 2000 and 9999 then
    raise exception 'year: must be between 2000 and 9999' using errcode = '22023';
  end if;
  if month is null or month not between 1 and 12 then
    raise exception 'month: must be between 1 and 12' using errcode = '22023';
  end if;
  if target_user_id is distinct from (select auth.uid()) and not private.is_trusted_caller() then
    raise exception 'only super admins may read another user''s usage' using errcode = '42501';
  end if;
  return jsonb_build_object('user_id', target_user_id, 'year', year, 'month', month)
      || private.usage_summary(target_user_id, make_date(year, month, 1));
end
$$;
grant execute on function private.monthly_token_usage(uuid, integer, integer) to authenticated, service_role;
create or replace function public.monthly_token_usage(user_id uuid, year integer, month integer) returns jsonb
language sql stable
set search_path = ''
as $$ select private.monthly_token_usage($1, $2, $3) $$;
comment on function public.monthly_token_usage(uuid, integer, integer) is
  'A user''s AI usage in a calendar month (UTC): {user_id, year, month, total_tokens, total_cost, calls, breakdown: {Tone, Images, Packs: {calls, tokens, images, cost}}}. Own usage, or anyone''s for super admins.';
grant execute on function public.monthly_token_usage(uuid, integer, integer) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Daily caps
-- ---------------------------------------------------------------------------------------------
-- A counter per user, UTC day and type, claimed before each provider call. Yesterday's and
-- older counters are deleted by a daily pg_cron job (in the migrations).

create table private.ai_daily_calls (
  user_id uuid not null references public.profiles (id) on delete cascade,
  day date not null,
  usage_type text not null,
  calls integer not null,
  primary key (user_id, day, usage_type)
);
comment on table private.ai_daily_calls is
  'Calls claimed per user, UTC day and usage type, against private.ai_usage_types.daily_cap_per_user. Days before yesterday are deleted nightly.';

-- The cap in force for a usage type: `daily_cap` when given (0: no cap; the api's
-- AI_DAILY_CAP_<TYPE>), else private.ai_usage_types' (null: no cap, 0: none allowed). Null: no cap.
create or replace function private.ai_daily_cap(usage_type text, daily_cap integer) returns integer
language plpgsql stable
set search_path = ''
as $$
declare
  cap integer;
begin
  if daily_cap < 0 then
    raise exception 'daily_cap: must be 0 (no cap) or more' using errcode = '22023';
  end if;
  select t.daily_cap_per_user into cap from private.ai_usage_types t where t.usage_type = ai_daily_cap.usage_type;
  if not found then
    raise exception 'usage_type: unknown type %', ai_daily_cap.usage_type using errcode = '22023';
  end if;
  return case when daily_cap is null then cap else nullif(daily_cap, 0) end;
end
$$;
revoke all on function private.ai_daily_cap(text, integer) from public;

-- Whether the user has used up today's (UTC) calls of the type under that cap: what a claim
-- would refuse, read without claiming (the tone queue asks before queueing an entry).
create or replace function private.ai_daily_cap_reached(target_user_id uuid, usage_type text, daily_cap integer)
returns boolean
language plpgsql stable
set search_path = ''
as $$
declare
  cap integer := private.ai_daily_cap(ai_daily_cap_reached.usage_type, ai_daily_cap_reached.daily_cap);
begin
  return cap is not null and cap <= coalesce(
    (select d.calls from private.ai_daily_calls d
      where d.user_id = target_user_id and d.day = (now() at time zone 'UTC')::date
        and d.usage_type = ai_daily_cap_reached.usage_type), 0);
end
$$;
revoke all on function private.ai_daily_cap_reached(uuid, text, integer) from public;

/*
 * Claims up to `wanted` calls of a usage type against a user's cap for today (UTC) and
 * returns {granted (0..wanted), day, counted}. The cap is `daily_cap` when given (0: no cap;
 * the api passes AI_DAILY_CAP_<TYPE>), else private.ai_usage_types' (null: no cap, 0: none
 * allowed). Concurrent claims of one user and type are serialized on the counter row, so
 * together they never pass the cap. Uncapped claims are not counted (counted: false).
 */
create or replace function private.claim_ai_calls(target_user_id uuid, usage_type text, wanted integer, daily_cap integer)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  today constant date := (now() at time zone 'UTC')::date;
  cap integer;
  used integer;
  granted integer;
begin
  -- A user may spend only their own cap (the service role counts anyone's).
  if target_user_id is distinct from (select auth.uid()) and not private.is_trusted_caller() then
    raise exception 'only your own AI calls are counted' using errcode = '42501';
  end if;
  if wanted is null or wanted not between 1 and 100 then
    raise exception 'wanted: must be between 1 and 100' using errcode = '22023';
  end if;
  cap := private.ai_daily_cap(claim_ai_calls.usage_type, claim_ai_calls.daily_cap);
  if cap is null then
    return jsonb_build_object('granted', wanted, 'day', today, 'counted', false);
  end if;
  insert into private.ai_daily_calls as d (user_id, day, usage_type, calls)
  values (target_user_id, today, claim_ai_calls.usage_type, 0)
  on conflict on constraint ai_daily_calls_pkey do nothing;
  select d.calls into used from private.ai_daily_calls d
   where d.user_id = target_user_id and d.day = today and d.usage_type = claim_ai_calls.usage_type
     for update;
  granted := greatest(0, least(wanted, cap - used));
  if granted > 0 then
    update private.ai_daily_calls d set calls = d.calls + granted
     where d.user_id = target_user_id and d.day = today and d.usage_type = claim_ai_calls.usage_type;
  end if;
  return jsonb_build_object('granted', granted, 'day', today, 'counted', true);
end
$$;
grant execute on function private.claim_ai_calls(uuid, text, integer, integer) to authenticated, service_role;
create or replace function public.claim_ai_calls(usage_type text, wanted integer default 1, daily_cap integer default null)
returns jsonb
language plpgsql
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  return private.claim_ai_calls((select auth.uid()), claim_ai_calls.usage_type, wanted, daily_cap);
end
$$;
comment on function public.claim_ai_calls(text, integer, integer) is
  'Claims up to `wanted` AI calls (images) against the caller''s daily cap for the type: {granted, day, counted}. daily_cap overrides the default (0: no cap); it only ever concerns the caller''s own counter.';
grant execute on function public.claim_ai_calls(text, integer, integer) to authenticated;

/*
 * Gives claimed calls back (calls the provider did not bill), on the day they were claimed.
 * A billed call counts whatever happens after it (a caller can make our side fail on purpose,
 * by deleting the pack or entry mid-call): the counter never drops below the calls recorded in
 * ai_usage for that user, type and day, nor below zero. The service role only: a user who
 * could give calls back could spend past the cap.
 */
create or replace function private.release_ai_calls(target_user_id uuid, usage_type text, day date, calls integer)
returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  billed integer;
  left_today integer;
begin
  if calls is null or calls not between 1 and 100 then
    raise exception 'calls: must be between 1 and 100' using errcode = '22023';
  end if;
  -- Lock the counter first: a usage row recorded after this read belongs to a call still
  -- holding its place, which this release does not touch.
  perform 1 from private.ai_daily_calls d
   where d.user_id = target_user_id and d.day = release_ai_calls.day and d.usage_type = release_ai_calls.usage_type
     for update;
  if not found then
    return 0;
  end if;
  select count(*) into billed from public.ai_usage u
   where u.user_id = target_user_id and u.usage_type = release_ai_calls.usage_type
     and u.created_at >= release_ai_calls.day::timestamp at time zone 'UTC'
     and u.created_at < (release_ai_calls.day + 1)::timestamp at time zone 'UTC';
  update private.ai_daily_calls d
     set calls = greatest(0, d.calls - release_ai_calls.calls, least(d.calls, billed))
   where d.user_id = target_user_id and d.day = release_ai_calls.day and d.usage_type = release_ai_calls.usage_type
  returning d.calls into left_today;
  return left_today;
end
$$;
grant execute on function private.release_ai_calls(uuid, text, date, integer) to service_role;
create or replace function public.release_ai_calls(user_id uuid, usage_type text, day date, calls integer default 1)
returns integer
language sql
set search_path = ''
as $$ select private.release_ai_calls($1, $2, $3, $4) $$;
comment on function public.release_ai_calls(uuid, text, date, integer) is
  'Service role (the api) only: gives back calls claimed on `day` that the provider did not bill (never below the calls ai_usage recorded that day); returns the calls still counted that day.';

-- One call against the caller's default cap: true while allowed.
create or replace function private.claim_ai_call(target_user_id uuid, usage_type text) returns boolean
language sql
set search_path = ''
as $$ select (private.claim_ai_calls($1, $2, 1, null) ->> 'granted')::integer = 1 $$;
grant execute on function private.claim_ai_call(uuid, text) to authenticated, service_role;
create or replace function public.claim_ai_call(usage_type text) returns boolean
language plpgsql
set search_path = ''
as $$
begin
  if (select auth.uid()) is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  return private.claim_ai_call((select auth.uid()), claim_ai_call.usage_type);
end
$$;
comment on function public.claim_ai_call(text) is
  'Counts one AI call against the caller''s daily cap for the type; false once the cap is reached (then do not call the provider).';
grant execute on function public.claim_ai_call(text) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Conversion rates
-- ---------------------------------------------------------------------------------------------
-- Tokens per drop: effective-dated, append-only; the newest effective row is current.
-- Super admins only.

create table public.token_conversion_rates (
  id bigint generated always as identity primary key,
  tokens_per_drop numeric(20, 4) not null check (tokens_per_drop > 0),
  effective_at timestamptz not null default now(),
  created_by uuid,
  created_at timestamptz not null default now()
);
alter table public.token_conversion_rates enable row level security;
comment on table public.token_conversion_rates is
  'How many AI tokens make one drop, from effective_at on; the newest effective row is current. Append-only: history is never rewritten.';
revoke all on public.token_conversion_rates from anon, authenticated, service_role;
grant select on public.token_conversion_rates to authenticated, service_role;
grant insert (tokens_per_drop, effective_at)
  on public.token_conversion_rates to authenticated;
create index token_conversion_rates_newest on public.token_conversion_rates (effective_at desc, id desc);
create policy "token_conversion_rates: super admins read" on public.token_conversion_rates
  for select to authenticated using ((select private.is_super_admin()));
create policy "token_conversion_rates: super admins add rates" on public.token_conversion_rates
  for insert to authenticated with check ((select private.is_super_admin()));
create trigger token_conversion_rates_stamp before insert or update or delete on public.token_conversion_rates
  for each row execute function private.stamp_effective_row();

-- A new rate's rule in words, as POST /api/admin/conversion/rates says it: the smallest positive
-- value the column holds (numeric(20, 4)) is 0.0001.
create or replace function private.check_token_conversion_rate_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('tokens_per_drop', new.tokens_per_drop);
  perform private.check_between('tokens_per_drop', new.tokens_per_drop, 0.0001, null);
  return new;
end
$$;
create trigger token_conversion_rates_check_fields before insert on public.token_conversion_rates
  for each row execute function private.check_token_conversion_rate_fields();
create or replace function public.current_token_conversion_rate() returns setof public.token_conversion_rates
language sql stable
set search_path = ''
as $$
  select * from public.token_conversion_rates r where r.effective_at <= now()
   order by r.effective_at desc, r.id desc limit 1
$$;
comment on function public.current_token_conversion_rate() is
  'The rate in force now (RLS: super admins), or no row.';
grant execute on function public.current_token_conversion_rate() to authenticated;

-- ---------------------------------------------------------------------------------------------
-- Tone analysis on the entry path
-- ---------------------------------------------------------------------------------------------
-- Which mood came from the analyzer (journal_entries.mood_detected), so an explicit mood (one
-- a user chose) is never overwritten by a later analysis.

-- Keeps journal_entries.mood_detected true only for a mood the tone analysis applied; a mood
-- the user sets clears it.
create or replace function private.track_mood_source() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if new.mood is distinct from old.mood then
    new.mood_detected := coalesce(current_setting('app.applying_detected_mood', true), '') = 'on';
  elsif new.mood_detected is distinct from old.mood_detected
        and coalesce(current_setting('app.applying_detected_mood', true), '') <> 'on' then
    new.mood_detected := old.mood_detected;
  end if;
  return new;
end
$$;
create trigger journal_entries_mood_source before update of mood, mood_detected on public.journal_entries
  for each row execute function private.track_mood_source();

-- Hex SHA-256 of a text (the content hash tone analysis compares).
create or replace function private.sha256_hex(body text) returns text
language sql immutable
set search_path = ''
as $$ select encode(pg_catalog.sha256(convert_to(coalesce(body, ''), 'UTF8')), 'hex') $$;

/*
 * After an analysis on the entry path (service role): records the billed call and, when a
 * mood was detected, sets it, unless meanwhile the user chose a mood or changed the text
 * (content_sha256: the analysed text). One transaction. Returns
 * {mood_applied, mood, updated_at, cost_usd}.
 */
create or replace function private.apply_tone_analysis(
  entry_id uuid, user_id uuid, detected_mood text, content_sha256 text,
  model text, input_tokens integer, output_tokens integer
) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  usage public.ai_usage;
  applied_mood text;
  applied_at timestamptz;
begin
  if model is not null then
    usage := private.record_ai_usage(apply_tone_analysis.user_id, 'tone_analysis', model, input_tokens,
                                     output_tokens, 0, null, apply_tone_analysis.entry_id, null);
  end if;
  if detected_mood is not null then
    perform set_config('app.applying_detected_mood', 'on', true);
    update public.journal_entries e set mood = detected_mood
     where e.id = apply_tone_analysis.entry_id and e.user_id = apply_tone_analysis.user_id
       and (e.mood is null or e.mood_detected)
       and exists (select 1 from public.journal_entry_contents c
                    where c.entry_id = e.id and private.sha256_hex(c.content) = lower(content_sha256))
    returning e.mood, e.updated_at into applied_mood, applied_at;
    perform set_config('app.applying_detected_mood', 'off', true);
  end if;
  return jsonb_build_object('mood_applied', applied_mood is not null, 'mood', applied_mood,
                            'updated_at', applied_at, 'cost_usd', usage.cost_usd);
end
$$;
grant execute on function private.apply_tone_analysis(uuid, uuid, text, text, text, integer, integer) to service_role;
create or replace function public.apply_tone_analysis(
  entry_id uuid, user_id uuid, detected_mood text, content_sha256 text,
  model text default null, input_tokens integer default 0, output_tokens integer default 0
) returns jsonb
language sql
set search_path = ''
as $$ select private.apply_tone_analysis($1, $2, $3, $4, $5, $6, $7) $$;
comment on function public.apply_tone_analysis(uuid, uuid, text, text, text, integer, integer) is
  'Entry path, service role only: records the analysis'' usage and sets the detected mood unless the user chose one or the text changed meanwhile.';

-- ---------------------------------------------------------------------------------------------
-- Entry backgrounds
-- ---------------------------------------------------------------------------------------------
-- Generated images in the entry-backgrounds bucket (its row is in the migrations).

/*
 * Records an entry's stored background: service role only (the api, once the image is in the
 * bucket), for the owner it names. The object must exist in the bucket, in the owner's folder
 * and named for this entry, and the URL must end with its name, so no client can point the
 * column (which other readers see) at an address of its choosing. Returns the object it
 * replaced (the caller deletes it). Not the owner's entry: not found.
 */
create or replace function private.set_entry_background(owner_id uuid, entry_id uuid, object_name text, url text)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  previous text;
begin
  select e.background_object into previous
    from public.journal_entries e
   where e.id = set_entry_background.entry_id and e.user_id = owner_id
     for update;
  if not found then
    raise exception 'entry not found' using errcode = 'PT404';
  end if;
  if object_name is null or object_name not like owner_id::text || '/' || set_entry_background.entry_id::text || '-%'
     or object_name ~ '(^|/)\.\.?(/|$)' or char_length(object_name) > 512
     or not exists (select 1 from storage.objects o where o.bucket_id = 'entry-backgrounds' and o.name = object_name) then
    raise exception 'object_name: must name a stored object in the owner''s folder for this entry' using errcode = '22023';
  end if;
  if url is null or url !~ '^https?://' or char_length(url) > 2048 or right(url, char_length(object_name) + 1) <> '/' || object_name then
    raise exception 'url: must be the public address of object_name' using errcode = '22023';
  end if;
  update public.journal_entries e set background_url = url, background_object = object_name
   where e.id = set_entry_background.entry_id;
  return jsonb_build_object('previous_object', previous, 'background_url', url);
end
$$;
grant execute on function private.set_entry_background(uuid, uuid, text, text) to service_role;
create or replace function public.set_entry_background(owner_id uuid, entry_id uuid, object_name text, url text)
returns jsonb
language sql
set search_path = ''
as $$ select private.set_entry_background($1, $2, $3, $4) $$;
comment on function public.set_entry_background(uuid, uuid, text, text) is
  'Service role (the api) only: records the stored background image of an owner''s entry; returns {previous_object, background_url}.';
