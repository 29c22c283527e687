-- =============================================================================================
-- Labs: experiments
-- =============================================================================================
-- Templates, clones, replications and their convergence (routes/labs/experiments.ts).
-- The area's overview: labs/shared.sql.

-- ---------------------------------------------------------------------------------------------
-- Numbers: finite and bounded
-- ---------------------------------------------------------------------------------------------

-- Numbers: every labs number (template inputs, golden specs, measured values) is a finite JSON
-- number within fixed bounds.

-- The largest magnitude a labs number may have: far beyond any quantity the six calculators
-- measure (frequencies in Hz, voltages, Q factors), far below where squares and sums of
-- double precision overflow.
create or replace function private.labs_max_magnitude() returns numeric
language sql immutable
set search_path = ''
as $$ select 1e15::numeric $$;
grant execute on function private.labs_max_magnitude() to authenticated, service_role;

-- The smallest non-zero magnitude: double precision holds nothing much smaller (1e-400 would
-- fail to convert, 1e-310 would lose its precision), and no calculator quantity comes near it.
create or replace function private.labs_min_magnitude() returns numeric
language sql immutable
set search_path = ''
as $$ select 1e-300::numeric $$;
grant execute on function private.labs_min_magnitude() to authenticated, service_role;

-- A JSON number within the bounds (false for any other JSON value, numeric strings included).
create or replace function private.labs_plausible_number(value jsonb) returns boolean
language sql immutable
set search_path = ''
as $$
  select coalesce(jsonb_typeof(value) = 'number'
                  and abs((value #>> '{}')::numeric) <= private.labs_max_magnitude()
                  and (abs((value #>> '{}')::numeric) >= private.labs_min_magnitude() or (value #>> '{}')::numeric = 0), false)
$$;
grant execute on function private.labs_plausible_number(jsonb) to authenticated, service_role;
-- ---------------------------------------------------------------------------------------------
-- Experiments: templates, clones, replications
-- ---------------------------------------------------------------------------------------------

create table public.labs_experiments (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  title text not null check (char_length(title) between 1 and 200),
  calculator text not null check (calculator in ('resonance', 'coil', 'impedance', 'electrolysis', 'pulsed_dc', 'plasma')),
  inputs jsonb not null default '{}'::jsonb check (jsonb_typeof(inputs) = 'object' and pg_column_size(inputs) <= 8192),
  is_template boolean not null default false,
  is_public boolean not null default false,
  safety_level text not null default 'adult_only' check (safety_level in ('adult_only', 'with_supervision', 'classroom_safe')),
  min_grade_band text check (min_grade_band in ('K-5', '6-8', '9-12')),
  predicted_values jsonb check (jsonb_typeof(predicted_values) = 'object' and pg_column_size(predicted_values) <= 16384),
  cloned_from uuid references public.labs_experiments (id) on delete set null,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  constraint labs_experiments_classroom_band check (safety_level <> 'classroom_safe' or min_grade_band is not null),
  constraint labs_experiments_clone_not_template check (not (is_template and cloned_from is not null))
);
alter table public.labs_experiments enable row level security;
comment on table public.labs_experiments is
  'Experiment templates (is_template) and the clones users run from them (cloned_from). Safety level, grade band '
  'and predicted values change only through super-admin RPCs.';
comment on column public.labs_experiments.predicted_values is
  'The golden spec: {calculator, optimal_inputs, calculator_outputs: {outputs: [{label, value, unit}]}}; '
  'the first output''s value is the prediction replications are measured against.';
revoke all on public.labs_experiments from anon, authenticated, service_role;
grant select, delete on public.labs_experiments to authenticated;
grant select on public.labs_experiments to service_role;
grant insert (title, calculator, inputs, is_template, is_public), update (title, inputs, is_public)
  on public.labs_experiments to authenticated;

create index labs_experiments_owner on public.labs_experiments (owner_id, created_at desc);

create index labs_experiments_cloned_from on public.labs_experiments (cloned_from);

create index labs_experiments_public_templates on public.labs_experiments (created_at desc, id desc)
  where is_template and is_public;

-- The step-prompt job: unfinished clones by owner.
create index labs_experiments_unfinished_clones on public.labs_experiments (owner_id)
  where cloned_from is not null and completed_at is null;

create policy "labs_experiments: own, public templates, or super admin" on public.labs_experiments
  for select to authenticated
  using (
    owner_id = (select auth.uid())
    or (select private.is_super_admin())
    or (is_template and is_public
        and (safety_level = 'classroom_safe' or not (select private.labs_is_classroom((select auth.uid())))))
  );
comment on policy "labs_experiments: own, public templates, or super admin" on public.labs_experiments is
  'Classroom accounts see public templates only when classroom_safe (SPEC Other admin rules 3).';

create policy "labs_experiments: owners create" on public.labs_experiments
  for insert to authenticated
  with check (owner_id = (select auth.uid()));

create policy "labs_experiments: owners edit" on public.labs_experiments
  for update to authenticated
  using (owner_id = (select auth.uid()))
  with check (owner_id = (select auth.uid()));

create policy "labs_experiments: owners delete" on public.labs_experiments
  for delete to authenticated
  using (owner_id = (select auth.uid()));

-- What users do in labs, for competition scoring: one row per clone, completion, build and
-- replication outcome. Written only by the RPCs below.
create table public.labs_activity_events (
  id bigint generated always as identity primary key,
  user_id uuid not null references public.profiles (id) on delete cascade,
  kind text not null check (kind in ('clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build')),
  experiment_id uuid references public.labs_experiments (id) on delete set null,
  created_at timestamptz not null default now(),
  template_id uuid references public.labs_experiments (id) on delete set null,
  replication_id uuid -- references public.labs_replications, below
);
alter table public.labs_activity_events enable row level security;
comment on table public.labs_activity_events is
  'Labs activity that competitions score (scoring_config weights per kind): on curated (golden-spec) public templates of '
  'others only, at most one clone, completion, build and replication per user and template. Users read their own.';
comment on column public.labs_activity_events.template_id is 'The curated public template the activity was on.';
comment on column public.labs_activity_events.replication_id is
  'The replication a replication_* event scored. Only private.labs_remove_replication (super admins) takes the event '
  'out with it.';
revoke all on public.labs_activity_events from anon, authenticated, service_role;
grant select on public.labs_activity_events to authenticated, service_role;

create index labs_activity_events_user on public.labs_activity_events (user_id, created_at);

create index labs_activity_events_experiment on public.labs_activity_events (experiment_id);

create index labs_activity_events_template on public.labs_activity_events (template_id);

create index labs_activity_events_replication on public.labs_activity_events (replication_id);

-- At most one scored event per user, template and kind (confirmed and refuted are one kind:
-- the first replication a user reports on a template decides which).
create unique index labs_activity_events_once_per_template on public.labs_activity_events
  (user_id, template_id, (case when kind in ('replication_confirmed', 'replication_refuted') then 'replication' else kind end));

create policy "labs_activity_events: own or super admin" on public.labs_activity_events
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create table public.labs_replications (
  id uuid primary key default gen_random_uuid(),
  clone_id uuid references public.labs_experiments (id) on delete set null,
  template_id uuid not null references public.labs_experiments (id) on delete cascade,
  user_id uuid not null references public.profiles (id) on delete cascade,
  measured_value double precision not null check (measured_value <> 'NaN' and measured_value not in ('Infinity', '-Infinity')),
  predicted_value double precision,
  confirmed boolean,
  created_at timestamptz not null default now()
);
alter table public.labs_replications enable row level security;
alter table public.labs_activity_events
  add foreign key (replication_id) references public.labs_replications (id) on delete set null;
comment on table public.labs_replications is
  'Replication results reported on clones. confirmed: within 5 % of the template''s prediction at report time '
  '(null without a prediction). Reporters read their own; template statistics come from private.labs_template_stats.';
comment on column public.labs_replications.clone_id is 'The clone it was reported on; null once its owner deleted the clone.';
revoke all on public.labs_replications from anon, authenticated, service_role;
grant select on public.labs_replications to authenticated, service_role;

create index labs_replications_clone on public.labs_replications (clone_id);

create index labs_replications_template on public.labs_replications (template_id, created_at);

create index labs_replications_user on public.labs_replications (user_id);

create policy "labs_replications: own or super admin" on public.labs_replications
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- A template's predicted value from its golden spec; a stored prediction out of bounds is no
-- prediction rather than an error.
create or replace function private.labs_predicted_value(spec jsonb) returns double precision
language sql immutable
set search_path = ''
as $$
  select case when private.labs_plausible_number(spec -> 'calculator_outputs' -> 'outputs' -> 0 -> 'value')
              then (spec -> 'calculator_outputs' -> 'outputs' -> 0 ->> 'value')::double precision end
$$;
grant execute on function private.labs_predicted_value(jsonb) to authenticated, service_role;

create or replace function private.labs_template_stats(template_ids uuid[])
returns table (template_id uuid, replications integer, independent_confirmations integer, mean numeric,
               stddev numeric, anomalies integer, robust boolean)
language sql stable security definer
set search_path = ''
as $$
  with moments as (
    select r.template_id, count(*)::integer as n, avg(r.measured_value::numeric) as mean,
           stddev_samp(r.measured_value::numeric) as sd,
           count(distinct r.user_id) filter (where r.confirmed)::integer as confirmations
      from public.labs_replications r
     where r.template_id = any (template_ids)
     group by r.template_id
  )
  select m.template_id, m.n, m.confirmations, trim_scale(m.mean), trim_scale(m.sd),
         (select count(*)::integer from public.labs_replications r
           where r.template_id = m.template_id and m.n >= 3 and abs(r.measured_value::numeric - m.mean) > 2 * m.sd),
         m.confirmations >= 50
    from moments m
$$;
comment on function private.labs_template_stats(uuid[]) is
  'Per template: replications, independent confirmations (distinct users within 5 %), mean, sample stddev, '
  'anomalies (> 2 stddev from the mean) and robust (>= 50 confirmations). Numeric arithmetic: no stored value overflows it.';
grant execute on function private.labs_template_stats(uuid[]) to authenticated, service_role;

-- A template's replications with their anomaly flags (numeric arithmetic, no overflow).
create or replace function private.labs_template_replications(template_id uuid)
returns table (id uuid, measured_value double precision, confirmed boolean, is_anomaly boolean, created_at timestamptz)
language sql stable security definer
set search_path = ''
as $$
  with m as (
    select count(*) as n, avg(measured_value::numeric) as mean, stddev_samp(measured_value::numeric) as sd
      from public.labs_replications where labs_replications.template_id = labs_template_replications.template_id
  )
  select r.id, r.measured_value, r.confirmed,
         coalesce(m.n >= 3 and abs(r.measured_value::numeric - m.mean) > 2 * m.sd, false), r.created_at
    from public.labs_replications r cross join m
   where r.template_id = labs_template_replications.template_id
   order by r.created_at desc, r.id desc
   limit 500
$$;
grant execute on function private.labs_template_replications(uuid) to authenticated, service_role;

-- Super admins: every replication flagged as an anomaly (> 2 sample standard deviations from its
-- template's mean, templates with at least 3 replications), newest first, with its template.
create or replace function private.labs_flagged_anomalies(
  page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, template_id uuid, template_title text, user_id uuid, measured_value double precision,
                 predicted_value double precision, mean numeric, stddev numeric, replications integer,
                 created_at timestamptz)
language plpgsql stable security definer
set search_path = ''
as $$
begin
  perform private.require_trusted_caller('read flagged anomalies');
  return query
    with m as (
      select r.template_id, count(*)::integer as n, avg(r.measured_value::numeric) as mean,
             stddev_samp(r.measured_value::numeric) as sd
        from public.labs_replications r
       group by r.template_id
      having count(*) >= 3
    )
    select r.id, r.template_id, e.title, r.user_id, r.measured_value, r.predicted_value, trim_scale(m.mean),
           trim_scale(m.sd), m.n, r.created_at
      from public.labs_replications r
      join m on m.template_id = r.template_id
      join public.labs_experiments e on e.id = r.template_id
     where abs(r.measured_value::numeric - m.mean) > 2 * m.sd
       and (before_time is null or (r.created_at, r.id) < (before_time, before_id))
     order by r.created_at desc, r.id desc
     limit least(greatest(coalesce(page_size, 50), 1), 101);
end
$$;
grant execute on function private.labs_flagged_anomalies(integer, timestamptz, uuid) to authenticated, service_role;

create or replace function public.labs_flagged_anomalies(
  page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, template_id uuid, template_title text, user_id uuid, measured_value double precision,
                 predicted_value double precision, mean numeric, stddev numeric, replications integer,
                 created_at timestamptz)
language sql stable security invoker
set search_path = ''
as $$ select * from private.labs_flagged_anomalies(page_size, before_time, before_id) $$;
comment on function public.labs_flagged_anomalies(integer, timestamptz, uuid) is
  'Super admins: replications more than 2 standard deviations from their template''s mean, newest first.';
grant execute on function labs_flagged_anomalies(integer, timestamptz, uuid) to authenticated, service_role;

-- Templates the caller may see (RLS), with their convergence.
create or replace function public.labs_template_list(
  page_size integer default 50, before_time timestamptz default null, before_id uuid default null
) returns table (id uuid, owner_id uuid, title text, calculator text, inputs jsonb, safety_level text,
                 min_grade_band text, is_public boolean, predicted_values jsonb, created_at timestamptz, convergence jsonb)
language sql stable security invoker
set search_path = ''
as $$
  with page as (
    select e.* from public.labs_experiments e
     where e.is_template and (e.is_public or e.owner_id = (select auth.uid()))
       and (before_time is null or (e.created_at, e.id) < (before_time, before_id))
     order by e.created_at desc, e.id desc
     limit least(greatest(coalesce(page_size, 50), 1), 101)
  )
  select p.id, p.owner_id, p.title, p.calculator, p.inputs, p.safety_level, p.min_grade_band, p.is_public,
         p.predicted_values, p.created_at,
         jsonb_build_object('replications', coalesce(s.replications, 0),
                            'independent_confirmations', coalesce(s.independent_confirmations, 0),
                            'mean', s.mean, 'stddev', s.stddev, 'anomalies', coalesce(s.anomalies, 0),
                            'robust', coalesce(s.robust, false))
    from page p
    left join private.labs_template_stats(array(select id from page)) s on s.template_id = p.id
   order by p.created_at desc, p.id desc
$$;
grant execute on function labs_template_list(integer,timestamp with time zone,uuid) to authenticated, service_role;

-- One template the caller may see, with its convergence and replications (404 otherwise).
create or replace function public.labs_template_details(template_id uuid) returns jsonb
language plpgsql stable security invoker
set search_path = ''
as $$
declare
  t public.labs_experiments;
  stats record;
begin
  select * into t from public.labs_experiments e where e.id = template_id and e.is_template;
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  select * into stats from private.labs_template_stats(array[t.id]);
  return to_jsonb(t) || jsonb_build_object(
    'convergence', jsonb_build_object('replications', coalesce(stats.replications, 0),
      'independent_confirmations', coalesce(stats.independent_confirmations, 0), 'mean', stats.mean,
      'stddev', stats.stddev, 'anomalies', coalesce(stats.anomalies, 0), 'robust', coalesce(stats.robust, false)),
    'replications', coalesce((select jsonb_agg(to_jsonb(r)) from private.labs_template_replications(t.id) r), '[]'::jsonb));
end
$$;
grant execute on function labs_template_details(uuid) to authenticated, service_role;

-- Records a scoring activity event: only on others' curated public templates, at most one per
-- user, template and kind.
create or replace function private.labs_record_activity(uid uuid, kind text, experiment uuid, template uuid, replication uuid default null)
returns void
language plpgsql security definer
set search_path = ''
as $$
begin
  if kind = 'clone' then
    if not exists (select 1 from public.labs_experiments t
                    where t.id = template and t.is_public and t.owner_id <> uid and t.predicted_values is not null) then
      return;
    end if;
  elsif not exists (select 1 from public.labs_activity_events e where e.user_id = uid and e.template_id = template and e.kind = 'clone') then
    return;
  end if;
  insert into public.labs_activity_events (user_id, kind, experiment_id, template_id, replication_id)
  values (uid, kind, experiment, template, replication)
  on conflict do nothing;
end
$$;

-- Clones a public template for the caller, recording the clone event with its template.
create or replace function private.labs_clone_template(template_id uuid) returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  t public.labs_experiments;
  clone public.labs_experiments;
begin
  select * into t from public.labs_experiments e
   where e.id = template_id and e.is_template
     and (e.is_public or e.owner_id = me or private.is_super_admin());
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  if t.safety_level <> 'classroom_safe' and private.labs_is_classroom(me) then
    raise exception 'classroom accounts can clone only classroom-safe templates' using errcode = '42501';
  end if;
  insert into public.labs_experiments (owner_id, title, calculator, inputs, cloned_from)
  values (me, t.title, t.calculator, t.inputs, t.id)
  returning * into clone;
  perform private.labs_record_activity(me, 'clone', clone.id, t.id);
  return clone;
end
$$;
grant execute on function private.labs_clone_template(uuid) to authenticated;

create or replace function public.labs_clone_template(template_id uuid) returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_clone_template(template_id) $$;
grant execute on function labs_clone_template(uuid) to authenticated, service_role;

-- Marks a clone completed (and built). A build is what the
-- completing user says (nothing in the system can verify a kit); it scores only with a scored
-- completion's template, once per user and template.
create or replace function private.labs_complete_clone(clone_id uuid, built boolean default false)
returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_experiments;
begin
  update public.labs_experiments e set completed_at = now()
   where e.id = clone_id and e.owner_id = me and e.cloned_from is not null and e.completed_at is null
  returning * into c;
  if c.id is null then
    if not exists (select 1 from public.labs_experiments e where e.id = clone_id and e.owner_id = me and e.cloned_from is not null) then
      raise exception 'no clone % of yours', clone_id using errcode = 'PT404';
    end if;
    raise exception 'this clone is already completed' using errcode = 'PT409';
  end if;
  perform private.labs_record_activity(me, 'completion', c.id, c.cloned_from);
  if coalesce(built, false) then
    perform private.labs_record_activity(me, 'build', c.id, c.cloned_from);
  end if;
  return c;
end
$$;
grant execute on function private.labs_complete_clone(uuid,boolean) to authenticated;

create or replace function public.labs_complete_clone(clone_id uuid, built boolean default false)
returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_complete_clone(clone_id, built) $$;
grant execute on function labs_complete_clone(uuid,boolean) to authenticated, service_role;

-- Reports a measured value on one's own clone; confirmed when within 5 % of the template's
-- prediction.
create or replace function private.labs_report_replication(clone_id uuid, measured_value jsonb)
returns public.labs_replications
language plpgsql security definer
set search_path = ''
as $$
declare
  me uuid := private.require_signed_in();
  c public.labs_experiments;
  measured numeric;
  prediction double precision;
  row public.labs_replications;
begin
  if jsonb_typeof(measured_value) is distinct from 'number' then
    raise exception 'measured_value: must be a number' using errcode = '22023';
  end if;
  if not private.labs_plausible_number(measured_value) then
    raise exception 'measured_value: a number of magnitude at most 1e15 (and at least 1e-300 unless 0)' using errcode = '22023';
  end if;
  measured := (measured_value #>> '{}')::numeric;
  select * into c from public.labs_experiments e where e.id = clone_id and e.owner_id = me and e.cloned_from is not null;
  if c.id is null then
    raise exception 'no clone % of yours', clone_id using errcode = 'PT404';
  end if;
  select private.labs_predicted_value(t.predicted_values) into prediction from public.labs_experiments t where t.id = c.cloned_from;
  insert into public.labs_replications (clone_id, template_id, user_id, measured_value, predicted_value, confirmed)
  values (c.id, c.cloned_from, me, measured::double precision, prediction,
          case when prediction is not null
               then abs(measured - prediction::numeric) <= 0.05 * abs(prediction::numeric) end)
  returning * into row;
  if row.confirmed is not null then
    perform private.labs_record_activity(me, case when row.confirmed then 'replication_confirmed' else 'replication_refuted' end,
                                         c.id, c.cloned_from, row.id);
  end if;
  return row;
end
$$;
grant execute on function private.labs_report_replication(uuid,jsonb) to authenticated;

create or replace function public.labs_report_replication(clone_id uuid, measured_value jsonb)
returns public.labs_replications
language sql security invoker
set search_path = ''
as $$ select * from private.labs_report_replication(clone_id, measured_value) $$;
comment on function public.labs_report_replication(uuid, jsonb) is
  'Report a measured value on one''s own clone: a JSON number (not a string), magnitude at most 1e15 and at least 1e-300 '
  'unless 0; confirmed within 5 % of the prediction.';
grant execute on function labs_report_replication(uuid,jsonb) to authenticated, service_role;

-- Super admins: promote a template to classroom_safe (band required), reset it to adult_only.
create or replace function private.labs_set_template_safety(template_id uuid, safety_level text, min_grade_band text default null)
returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  t public.labs_experiments;
begin
  perform private.require_trusted_caller('change a template''s safety level');
  if safety_level not in ('classroom_safe', 'adult_only') then
    raise exception 'safety_level: classroom_safe or adult_only' using errcode = '22023';
  end if;
  if safety_level = 'classroom_safe' and (min_grade_band is null or min_grade_band not in ('K-5', '6-8', '9-12')) then
    raise exception 'min_grade_band: one of K-5, 6-8, 9-12' using errcode = '22023';
  end if;
  select * into t from public.labs_experiments e where e.id = template_id for update;
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  if not t.is_template then
    raise exception 'only templates have a safety level to change (this is a clone)' using errcode = 'PT409';
  end if;
  update public.labs_experiments e
     set safety_level = labs_set_template_safety.safety_level,
         min_grade_band = coalesce(labs_set_template_safety.min_grade_band, e.min_grade_band)
   where e.id = t.id
  returning * into t;
  return t;
end
$$;
grant execute on function private.labs_set_template_safety(uuid,text,text) to authenticated, service_role;

create or replace function public.labs_set_template_safety(template_id uuid, safety_level text, min_grade_band text default null)
returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_set_template_safety(template_id, safety_level, min_grade_band) $$;
grant execute on function labs_set_template_safety(uuid,text,text) to authenticated, service_role;

-- Sets a template's golden spec (super admins); every number bounded.
create or replace function private.labs_set_golden_spec(template_id uuid, spec jsonb) returns public.labs_experiments
language plpgsql security definer
set search_path = ''
as $$
declare
  t public.labs_experiments;
  output jsonb;
  k text;
begin
  perform private.require_trusted_caller('store golden specs');
  if jsonb_typeof(spec) is distinct from 'object' or spec - array['calculator', 'optimal_inputs', 'calculator_outputs'] <> '{}'::jsonb then
    raise exception 'body: {calculator, optimal_inputs, calculator_outputs} only' using errcode = '22023';
  end if;
  if jsonb_typeof(spec -> 'optimal_inputs') is distinct from 'object' then
    raise exception 'optimal_inputs: an object of name to number' using errcode = '22023';
  end if;
  for k in select jsonb_object_keys(spec -> 'optimal_inputs') loop
    if not private.labs_plausible_number(spec -> 'optimal_inputs' -> k) then
      raise exception 'optimal_inputs.%: a number of magnitude at most 1e15', k using errcode = '22023';
    end if;
  end loop;
  if jsonb_typeof(spec -> 'calculator_outputs' -> 'outputs') is distinct from 'array'
     or jsonb_array_length(spec -> 'calculator_outputs' -> 'outputs') = 0 then
    raise exception 'calculator_outputs.outputs: a non-empty array of {label, value, unit}' using errcode = '22023';
  end if;
  for output in select jsonb_array_elements(spec -> 'calculator_outputs' -> 'outputs') loop
    if jsonb_typeof(output -> 'label') is distinct from 'string' or jsonb_typeof(output -> 'value') is distinct from 'number'
       or jsonb_typeof(output -> 'unit') is distinct from 'string' then
      raise exception 'calculator_outputs.outputs: each needs label (string), value (number), unit (string)' using errcode = '22023';
    end if;
    if not private.labs_plausible_number(output -> 'value') then
      raise exception 'calculator_outputs.outputs.value: a number of magnitude at most 1e15' using errcode = '22023';
    end if;
  end loop;
  select * into t from public.labs_experiments e where e.id = template_id for update;
  if t.id is null then
    raise exception 'no template %', template_id using errcode = 'PT404';
  end if;
  if not t.is_template then
    raise exception 'golden specs belong to templates (this is a clone)' using errcode = 'PT409';
  end if;
  if spec ->> 'calculator' is distinct from t.calculator then
    raise exception 'calculator: the template uses %', t.calculator using errcode = '22023';
  end if;
  update public.labs_experiments e set predicted_values = spec where e.id = t.id returning * into t;
  return t;
end
$$;
grant execute on function private.labs_set_golden_spec(uuid,jsonb) to authenticated, service_role;

create or replace function public.labs_set_golden_spec(template_id uuid, spec jsonb) returns public.labs_experiments
language sql security invoker
set search_path = ''
as $$ select * from private.labs_set_golden_spec(template_id, spec) $$;
grant execute on function labs_set_golden_spec(uuid,jsonb) to authenticated, service_role;

-- Removed replications: what was removed, by whom and why. Plain uuids, no foreign keys: a
-- removal outlives the accounts and templates it names.
create table public.labs_replication_removals (
  id bigint generated always as identity primary key,
  replication_id uuid not null,
  template_id uuid not null,
  clone_id uuid,
  user_id uuid not null,
  measured_value double precision not null,
  confirmed boolean,
  reported_at timestamptz not null,
  removed_by uuid,
  reason text not null check (char_length(reason) between 1 and 1000),
  removed_at timestamptz not null default now()
);
alter table public.labs_replication_removals enable row level security;
comment on table public.labs_replication_removals is
  'Replications a super admin removed (the row as it was, who removed it and the mandatory reason). Super admins read; '
  'nobody updates or deletes (a trigger refuses it, whoever asks).';
comment on column public.labs_replication_removals.removed_by is 'The super admin; null for a direct database session.';
revoke all on public.labs_replication_removals from anon, authenticated, service_role;
grant select on public.labs_replication_removals to authenticated, service_role;

create index labs_replication_removals_template on public.labs_replication_removals (template_id, removed_at);

create index labs_replication_removals_newest on public.labs_replication_removals (removed_at desc, id desc);

create policy "labs_replication_removals: super admins read" on public.labs_replication_removals
  for select to authenticated using ((select private.is_super_admin()));

-- Super admins remove a replication with a reason (400 without; 404 unknown or already
-- removed): the only way a replication goes, short of its template or its reporter's account.
-- The removed report counts as never made: if it was the one that scored, its event goes and
-- the reporter's earliest remaining report on the template (if any) scores in its place, so
-- the next recompute reflects the reports that stand.
create or replace function private.labs_remove_replication(replication_id uuid, reason text)
returns public.labs_replication_removals
language plpgsql security definer
set search_path = ''
as $$
declare
  why text;
  r public.labs_replications;
  removal public.labs_replication_removals;
  was_scored boolean;
begin
  perform private.require_trusted_caller('remove replications');
  why := private.required_text(reason, 'reason', 1000);
  select * into r from public.labs_replications x where x.id = replication_id for update;
  if r.id is null then
    raise exception 'no replication %', replication_id using errcode = 'PT404';
  end if;
  -- The event first: deleting the replication would only set its replication_id to null.
  delete from public.labs_activity_events e where e.replication_id = r.id;
  was_scored := found;
  delete from public.labs_replications x where x.id = r.id;
  if was_scored then
    insert into public.labs_activity_events (user_id, kind, experiment_id, template_id, replication_id, created_at)
    select r.user_id, case when x.confirmed then 'replication_confirmed' else 'replication_refuted' end, x.clone_id, r.template_id,
           x.id, x.created_at
      from public.labs_replications x
     where x.user_id = r.user_id and x.template_id = r.template_id and x.confirmed is not null
     order by x.created_at, x.id
     limit 1
    on conflict do nothing;
  end if;
  insert into public.labs_replication_removals (replication_id, template_id, clone_id, user_id, measured_value, confirmed,
                                                reported_at, removed_by, reason)
  values (r.id, r.template_id, r.clone_id, r.user_id, r.measured_value, r.confirmed, r.created_at, (select auth.uid()), why)
  returning * into removal;
  return removal;
end
$$;
grant execute on function private.labs_remove_replication(uuid,text) to authenticated, service_role;

create or replace function public.labs_remove_replication(replication_id uuid, reason text)
returns public.labs_replication_removals
language sql security invoker
set search_path = ''
as $$ select * from private.labs_remove_replication(replication_id, reason) $$;
comment on function public.labs_remove_replication(uuid, text) is
  'Super admins: remove a replication (reason required); recorded in labs_replication_removals.';
grant execute on function labs_remove_replication(uuid,text) to authenticated, service_role;

-- Template and clone inputs, on every write (clients insert and update them through
-- PostgREST): an object of name to number, each finite and of magnitude at most 1e15.
create or replace function private.labs_check_experiment_inputs() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  k text;
begin
  if tg_op = 'UPDATE' and new.inputs is not distinct from old.inputs then
    return new;
  end if;
  if jsonb_typeof(new.inputs) is distinct from 'object' then
    raise exception 'inputs: an object of name to number' using errcode = '22023';
  end if;
  for k in select jsonb_object_keys(new.inputs) loop
    if not private.labs_plausible_number(new.inputs -> k) then
      raise exception 'inputs.%: a number of magnitude at most 1e15', k using errcode = '22023';
    end if;
  end loop;
  return new;
end
$$;
comment on function private.labs_check_experiment_inputs() is
  'BEFORE INSERT/UPDATE on labs_experiments: each input is a number of magnitude at most 1e15 (22023 naming it).';

create trigger labs_experiments_inputs before insert or update of inputs on public.labs_experiments
  for each row execute function private.labs_check_experiment_inputs();

-- The other client-written columns' rules in words, as /api says them (conventions.sql, "Field
-- rules in words"); the shape of inputs is labs_experiments_inputs' (just above), their size
-- this one's.
create or replace function private.labs_check_experiment_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('title', new.title);
  perform private.check_length('title', new.title, 200);
  perform private.check_required('calculator', new.calculator);
  perform private.check_one_of('calculator', new.calculator,
    array['resonance', 'coil', 'impedance', 'electrolysis', 'pulsed_dc', 'plasma']);
  perform private.check_required('inputs', new.inputs);
  if jsonb_typeof(new.inputs) = 'object' then
    perform private.check_object('inputs', new.inputs, 8192);
  end if;
  perform private.check_required('is_template', new.is_template);
  perform private.check_required('is_public', new.is_public);
  return new;
end
$$;
create trigger labs_experiments_check_fields
  before insert or update of title, calculator, inputs, is_template, is_public on public.labs_experiments
  for each row execute function private.labs_check_experiment_fields();
