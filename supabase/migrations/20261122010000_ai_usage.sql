-- AI usage and cost (issue 7): every billed provider call is one append-only row in
-- public.ai_usage whose cost is computed HERE from an effective-dated price table; a
-- statement trigger keeps the per-user calendar-month (UTC) aggregate in the same
-- transaction; per-user daily caps; tokens-to-drops conversion rates; super admins' user
-- list and audited role changes; the detected-mood bookkeeping of tone analysis.
--
-- ===== For other areas (tone packs: issue 8, note analysis and assistant drops: issue 10) =====
--
--   public.record_ai_usage(
--     user_id uuid, usage_type text, model text,
--     input_tokens integer default 0, output_tokens integer default 0,
--     image_count integer default 0, image_quality text default null,   -- 'standard' | 'hd'
--     entry_id uuid default null, pack_id uuid default null
--   ) returns public.ai_usage
--     Records one billed call for any user; the cost (usd) is computed from public.ai_prices
--     at the row's created_at. EXECUTE: service_role only (edge functions with the service
--     key: serviceDb().rpc('record_ai_usage', {...}); functions/_shared/ai_usage.ts wraps it).
--     Tokens: chat replies' usage.prompt_tokens/completion_tokens, GPT-image replies'
--     usage.input_tokens/output_tokens. Unknown usage_type: 22023; unknown user: PT404.
--
--   public.claim_ai_call(usage_type text) returns boolean
--     Counts one call against the CALLER's daily cap (UTC day) for that type and says whether
--     it is allowed (false once the cap is reached: answer 429). Types without a cap: true.
--     EXECUTE: authenticated (call it with the caller's token, before the provider).
--
--   private.ai_usage_types (usage_type, category, daily_cap_per_user)
--     The known usage types: tone_analysis (category Tone, cap 200/day), entry_background
--     (Images, 20/day), tone_pack_image (Packs, no cap). Another area adds its own in its
--     migration, e.g.
--       insert into private.ai_usage_types values ('note_analysis', 'Notes', null);
--     A new category appears in monthly_token_usage's breakdown (zero-filled for everyone).
--     Caps are changed the same way: update private.ai_usage_types set daily_cap_per_user = 50
--     where usage_type = 'tone_pack_image';
--
--   public.ai_prices: add a row for a model you use (unit input_1m_tokens, output_1m_tokens:
--     USD per million tokens; image_standard, image_hd: USD per image). A model without a
--     price row is recorded at cost 0 (self-hosted servers cost nothing per call).
-- ==============================================================================================

-- ---------------------------------------------------------------------------------------
-- Usage types and their daily caps

create table private.ai_usage_types (
  usage_type text primary key check (usage_type ~ '^[a-z][a-z0-9_]{0,39}$'),
  category text not null check (char_length(category) between 1 and 40),
  daily_cap_per_user integer check (daily_cap_per_user >= 0)
);
comment on table private.ai_usage_types is
  'Known AI usage types, the breakdown category of each (SPEC: Tone, Images, Packs) and the per-user daily cap (null: none).';
insert into private.ai_usage_types (usage_type, category, daily_cap_per_user) values
  ('tone_analysis', 'Tone', 200),
  ('entry_background', 'Images', 20),
  ('tone_pack_image', 'Packs', null);

-- ---------------------------------------------------------------------------------------
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
comment on table public.ai_prices is
  'AI prices in USD: per million input/output tokens, or per standard/HD image. The newest row effective at a call''s time applies; rows are never changed.';
comment on column public.ai_prices.usd_per_unit is 'USD per million tokens (token units) or per image (image units).';

insert into public.ai_prices (model, unit, usd_per_unit, effective_at) values
  -- SPEC Token tracking 2: the language model and the per-image prices.
  ('gpt-4o-mini', 'input_1m_tokens', 0.15, '2024-07-18T00:00:00Z'),
  ('gpt-4o-mini', 'output_1m_tokens', 0.60, '2024-07-18T00:00:00Z'),
  ('dall-e-3', 'image_standard', 0.040, '2023-11-06T00:00:00Z'),
  ('dall-e-3', 'image_hd', 0.080, '2023-11-06T00:00:00Z'),
  -- GPT-image models bill tokens (text input, image output); their replies report them.
  ('gpt-image-1', 'input_1m_tokens', 5.00, '2025-04-23T00:00:00Z'),
  ('gpt-image-1', 'output_1m_tokens', 40.00, '2025-04-23T00:00:00Z'),
  ('gpt-image-1-mini', 'input_1m_tokens', 2.00, '2025-10-06T00:00:00Z'),
  ('gpt-image-1-mini', 'output_1m_tokens', 8.00, '2025-10-06T00:00:00Z');

alter table public.ai_prices enable row level security;
revoke all on public.ai_prices from anon, authenticated, service_role;
grant select, insert (model, unit, usd_per_unit, effective_at) on public.ai_prices to authenticated;
grant select on public.ai_prices to service_role;

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

-- ---------------------------------------------------------------------------------------
-- Usage rows: append-only, one per billed provider call.

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
comment on table public.ai_usage is
  'One row per billed AI provider call (failed calls the provider billed included). cost_usd is computed in SQL from ai_prices when the row is written. Append-only.';
comment on column public.ai_usage.entry_id is 'The journal entry the call was for; kept (no foreign key) after the entry is deleted.';
comment on column public.ai_usage.pack_id is 'The tone pack the call was for; kept (no foreign key) after the pack is deleted.';
create index ai_usage_user_history on public.ai_usage (user_id, created_at desc, id desc);

alter table public.ai_usage enable row level security;
revoke all on public.ai_usage from anon, authenticated, service_role;
grant select on public.ai_usage to authenticated, service_role;

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

create or replace function private.forbid_usage_changes() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  -- Deleting a user cascades to their rows: allowed once their profile is gone.
  if tg_op = 'DELETE' and not exists (select 1 from public.profiles where id = old.user_id) then
    return old;
  end if;
  raise exception '% is append-only', tg_table_name using errcode = '42501';
end
$$;

create trigger ai_usage_append_only before update or delete on public.ai_usage
  for each row execute function private.forbid_usage_changes();
create trigger ai_usage_no_truncate before truncate on public.ai_usage
  for each statement execute function private.forbid_usage_changes();

-- ---------------------------------------------------------------------------------------
-- The monthly aggregate: one row per user, calendar month (UTC) and type, kept by a
-- statement trigger in the inserting transaction. Reads of a month never touch ai_usage.

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
comment on table public.ai_usage_monthly is
  'Sums of ai_usage per user, calendar month (UTC, first day) and type; maintained by a trigger on ai_usage in the same transaction.';

alter table public.ai_usage_monthly enable row level security;
revoke all on public.ai_usage_monthly from anon, authenticated, service_role;
grant select on public.ai_usage_monthly to authenticated, service_role;

create policy "ai_usage_monthly: owners and super admins read" on public.ai_usage_monthly
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

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

-- ---------------------------------------------------------------------------------------
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
revoke execute on function public.record_ai_usage(uuid, text, text, integer, integer, integer, text, uuid, uuid) from public, anon, authenticated;
grant execute on function public.record_ai_usage(uuid, text, text, integer, integer, integer, text, uuid, uuid) to service_role;

-- ---------------------------------------------------------------------------------------
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
grant execute on function public.monthly_token_usage(uuid, integer, integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------
-- Daily caps: a counter per user, UTC day and type, claimed before each provider call.

create table private.ai_daily_calls (
  user_id uuid not null references public.profiles (id) on delete cascade,
  day date not null,
  usage_type text not null,
  calls integer not null,
  primary key (user_id, day, usage_type)
);
comment on table private.ai_daily_calls is
  'Calls claimed per user, UTC day and usage type, against private.ai_usage_types.daily_cap_per_user. Days before yesterday are deleted nightly.';

create or replace function private.claim_ai_call(target_user_id uuid, usage_type text) returns boolean
language plpgsql security definer
set search_path = ''
as $$
declare
  cap integer;
  claimed integer;
begin
  -- A user may spend only their own cap (the service role counts anyone's).
  if target_user_id is distinct from (select auth.uid()) and not private.is_trusted_caller() then
    raise exception 'only your own AI calls are counted' using errcode = '42501';
  end if;
  select t.daily_cap_per_user into cap from private.ai_usage_types t where t.usage_type = claim_ai_call.usage_type;
  if not found then
    raise exception 'usage_type: unknown type %', claim_ai_call.usage_type using errcode = '22023';
  end if;
  if cap is null then
    return true;
  end if;
  if cap = 0 then
    return false;
  end if;
  insert into private.ai_daily_calls as d (user_id, day, usage_type, calls)
  values (target_user_id, (now() at time zone 'UTC')::date, claim_ai_call.usage_type, 1)
  on conflict on constraint ai_daily_calls_pkey do update set calls = d.calls + 1 where d.calls < cap
  returning d.calls into claimed;
  return claimed is not null;
end
$$;
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

select cron.schedule('ai-daily-calls-cleanup', '17 3 * * *',
  $$delete from private.ai_daily_calls where day < (now() at time zone 'UTC')::date - 1$$);

-- ---------------------------------------------------------------------------------------
-- Tone analysis on the entry path: which mood came from the analyzer, so an explicit mood
-- (one a user chose) is never overwritten by a later analysis.

alter table public.journal_entries add column mood_detected boolean not null default false;
comment on column public.journal_entries.mood_detected is
  'True while the mood is the one tone analysis set; any other change of mood makes it false. Not client-writable.';
grant select (mood_detected) on public.journal_entries to anon; -- anon columns are granted one by one (advisor_clean)

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

create or replace function private.sha256_hex(body text) returns text
language sql immutable
set search_path = ''
as $$ select encode(pg_catalog.sha256(convert_to(coalesce(body, ''), 'UTF8')), 'hex') $$;

/*
 * Before a PUT that sends new content without a mood: should the entry be analysed? Only
 * when the caller owns it, the content really changes (content_sha256: SHA-256 hex of the
 * new text), the stored mood is not one the user chose, and the caller's daily cap allows a
 * call (which this then counts). Returns {analyze, title} (the stored title, for the prompt).
 */
create or replace function private.begin_entry_tone_analysis(entry_id uuid, content_sha256 text) returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  caller uuid := (select auth.uid());
  worth_it boolean;
  stored_title text;
begin
  select (e.mood is null or e.mood_detected)
         and private.sha256_hex(c.content) is distinct from lower(content_sha256),
         e.title
    into worth_it, stored_title
    from public.journal_entries e
    left join public.journal_entry_contents c on c.entry_id = e.id
   where e.id = begin_entry_tone_analysis.entry_id and e.user_id = caller;
  if not coalesce(worth_it, false) or not private.claim_ai_call(caller, 'tone_analysis') then
    return jsonb_build_object('analyze', false, 'title', null);
  end if;
  return jsonb_build_object('analyze', true, 'title', stored_title);
end
$$;
grant execute on function private.begin_entry_tone_analysis(uuid, text) to authenticated;

create or replace function public.begin_entry_tone_analysis(entry_id uuid, content_sha256 text) returns jsonb
language sql
set search_path = ''
as $$ select private.begin_entry_tone_analysis($1, $2) $$;
comment on function public.begin_entry_tone_analysis(uuid, text) is
  'PUT /api/journal/:id: whether new content (its SHA-256 hex) should be analysed ({analyze, title}); counts the call against the daily cap when it should.';
grant execute on function public.begin_entry_tone_analysis(uuid, text) to authenticated;

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
revoke execute on function public.apply_tone_analysis(uuid, uuid, text, text, text, integer, integer) from public, anon, authenticated;
grant execute on function public.apply_tone_analysis(uuid, uuid, text, text, text, integer, integer) to service_role;

-- ---------------------------------------------------------------------------------------
-- Conversion rates (tokens per drop): effective-dated, append-only; the newest effective
-- row is current. Super admins only.

create table public.token_conversion_rates (
  id bigint generated always as identity primary key,
  tokens_per_drop numeric(20, 4) not null check (tokens_per_drop > 0),
  effective_at timestamptz not null default now(),
  created_by uuid,
  created_at timestamptz not null default now()
);
comment on table public.token_conversion_rates is
  'How many AI tokens make one drop, from effective_at on; the newest effective row is current. Append-only: history is never rewritten.';
create index token_conversion_rates_newest on public.token_conversion_rates (effective_at desc, id desc);

alter table public.token_conversion_rates enable row level security;
revoke all on public.token_conversion_rates from anon, authenticated, service_role;
grant select, insert (tokens_per_drop, effective_at) on public.token_conversion_rates to authenticated;
grant select on public.token_conversion_rates to service_role;

create policy "token_conversion_rates: super admins read" on public.token_conversion_rates
  for select to authenticated using ((select private.is_super_admin()));
create policy "token_conversion_rates: super admins add rates" on public.token_conversion_rates
  for insert to authenticated with check ((select private.is_super_admin()));

create trigger token_conversion_rates_stamp before insert or update or delete on public.token_conversion_rates
  for each row execute function private.stamp_effective_row();

create or replace function public.current_token_conversion_rate() returns setof public.token_conversion_rates
language sql stable
set search_path = ''
as $$
  select * from public.token_conversion_rates r where r.effective_at <= now()
   order by r.effective_at desc, r.id desc limit 1
$$;
comment on function public.current_token_conversion_rate() is
  'The rate in force now (RLS: super admins), or no row.';
grant execute on function public.current_token_conversion_rate() to authenticated, service_role;

-- ---------------------------------------------------------------------------------------
-- Role changes: audited, and the last super admin cannot be demoted, by any path (the API,
-- PostgREST PATCH, the SQL dashboard).

create table public.role_changes (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  old_role text not null,
  new_role text not null,
  changed_by uuid,
  changed_via text not null,
  created_at timestamptz not null default now()
);
comment on table public.role_changes is
  'Audit of profile role changes: whose (user_id), from and to, by whom (null: a database session) and through which role. Written only by a trigger on profiles; kept after either user is deleted.';
alter table public.role_changes enable row level security;
revoke all on public.role_changes from anon, authenticated, service_role;
grant select on public.role_changes to authenticated, service_role;
create policy "role_changes: super admins read" on public.role_changes
  for select to authenticated using ((select private.is_super_admin()));

create or replace function private.guard_last_super_admin() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  if old.role = 'super_admin' and new.role is distinct from 'super_admin' then
    -- One demotion at a time, so two admins demoting each other cannot both succeed; the
    -- check below then reads what the other transaction committed.
    perform pg_advisory_xact_lock(hashtext('public.profiles super_admin demotion'));
    if not exists (select 1 from public.profiles p where p.role = 'super_admin' and p.id <> new.id) then
      raise exception 'the last super admin cannot be demoted' using errcode = 'PT409';
    end if;
  end if;
  return new;
end
$$;

create trigger profiles_guard_last_super_admin before update of role on public.profiles
  for each row execute function private.guard_last_super_admin();

create or replace function private.audit_role_change() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into public.role_changes (user_id, old_role, new_role, changed_by, changed_via)
  values (new.id, old.role, new.role, (select auth.uid()), coalesce(private.request_role(), 'database'));
  return null;
end
$$;

create trigger profiles_audit_role_change after update of role on public.profiles
  for each row when (old.role is distinct from new.role)
  execute function private.audit_role_change();

-- PUT /api/admin/users/:id/role. Runs as the caller: grants, RLS and the triggers above apply.
create or replace function public.set_user_role(user_id uuid, role text) returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  previous text;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may change roles' using errcode = '42501';
  end if;
  if set_user_role.role is null or set_user_role.role not in ('user', 'super_admin') then
    raise exception 'role: must be one of user, super_admin' using errcode = '22023';
  end if;
  select p.role into previous from public.profiles p where p.id = set_user_role.user_id for update;
  if not found then
    raise exception 'user not found' using errcode = 'PT404';
  end if;
  if previous is distinct from set_user_role.role then
    update public.profiles p set role = set_user_role.role where p.id = set_user_role.user_id;
  end if;
  return jsonb_build_object('id', set_user_role.user_id, 'role', set_user_role.role,
                            'previous_role', previous, 'changed', previous is distinct from set_user_role.role);
end
$$;
comment on function public.set_user_role(uuid, text) is
  'Super admins: change a user''s role (user, super_admin); audited in role_changes; the last super admin cannot be demoted (409).';
grant execute on function public.set_user_role(uuid, text) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------
-- The super admins' user list: one query per page (profile, e-mail, balance, this month's
-- usage from the aggregate), newest first, keyset-paginated, searchable by e-mail or name.

create index profiles_newest on public.profiles (created_at desc, id desc);

create or replace function private.admin_list_users(
  search text, before_created_at timestamptz, before_id uuid, page_size integer
) returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language plpgsql stable security definer
set search_path = ''
as $$
declare
  -- The text searched for, with LIKE's wildcards taken literally; null: no search.
  pattern text := '%' || replace(replace(replace(nullif(btrim(search), ''), '\', '\\'), '%', '\%'), '_', '\_') || '%';
  this_month date := date_trunc('month', now() at time zone 'UTC')::date;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if page_size is null or page_size not between 1 and 101 then
    raise exception 'page_size: must be between 1 and 101' using errcode = '22023';
  end if;
  -- The cursor is always a row comparison (never "or null"), so it stays an index condition
  -- on profiles_newest in a cached generic plan: every page starts where the last one ended.
  if pattern is null then
    return query
      select p.id, u.email::text, p.full_name, p.role, p.is_ai, p.is_active, p.drops_balance, p.created_at,
             private.usage_summary(p.id, this_month)
        from public.profiles p
        join auth.users u on u.id = p.id
       where (p.created_at, p.id) < (coalesce(before_created_at, 'infinity'::timestamptz),
                                     coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid))
       order by p.created_at desc, p.id desc
       limit page_size;
  else
    -- A search reads each table once for its matches (e-mail in auth.users, name in
    -- profiles), then orders just those; filtering the newest-first walk row by row across
    -- the join is slower whenever matches are rare.
    return query
      select p.id, u.email::text, p.full_name, p.role, p.is_ai, p.is_active, p.drops_balance, p.created_at,
             private.usage_summary(p.id, this_month)
        from public.profiles p
        join auth.users u on u.id = p.id
       where p.id in (select m.id from auth.users m where m.email ilike pattern
                      union
                      select m.id from public.profiles m where m.full_name ilike pattern)
         and (p.created_at, p.id) < (coalesce(before_created_at, 'infinity'::timestamptz),
                                     coalesce(before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid))
       order by p.created_at desc, p.id desc
       limit page_size;
  end if;
end
$$;
grant execute on function private.admin_list_users(text, timestamptz, uuid, integer) to authenticated, service_role;

create or replace function public.admin_list_users(
  search text default null, before_created_at timestamptz default null, before_id uuid default null,
  page_size integer default 50
) returns table (
  id uuid, email text, full_name text, role text, is_ai boolean, is_active boolean,
  drops_balance integer, created_at timestamptz, token_usage jsonb
)
language sql stable
set search_path = ''
as $$ select * from private.admin_list_users($1, $2, $3, $4) $$;
comment on function public.admin_list_users(text, timestamptz, uuid, integer) is
  'Super admins: users newest first with e-mail, role, flags, drops balance and this month''s AI usage; search matches e-mail or name.';
grant execute on function public.admin_list_users(text, timestamptz, uuid, integer) to authenticated, service_role;

-- ---------------------------------------------------------------------------------------
-- Entry backgrounds: a public bucket, written only by the api function (service role).

insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
values ('entry-backgrounds', 'entry-backgrounds', true, 5 * 1024 * 1024,
        array['image/png', 'image/jpeg', 'image/jpg', 'image/webp'])
on conflict (id) do update set public = excluded.public, file_size_limit = excluded.file_size_limit,
  allowed_mime_types = excluded.allowed_mime_types;
