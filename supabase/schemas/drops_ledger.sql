-- =============================================================================================
-- Drops ledger
-- =============================================================================================
-- Drops, the product's currency, move only through an append-only ledger of signed deltas.
-- profiles.drops_balance is kept equal to the sum of a user's deltas by a statement trigger in
-- the same transaction; the profile's check constraint (balance >= 0) refuses any write that
-- would go below zero. Every grant of drops is a ledger row: the signup bonus, the monthly
-- award, purchases and refunds (payments_email.sql, tone_packs.sql) and admin adjustments.

-- ---------------------------------------------------------------------------------------------
-- The ledger
-- ---------------------------------------------------------------------------------------------

create table public.drops_transactions (
  id bigint generated always as identity primary key,
  user_id uuid not null references public.profiles (id) on delete cascade,
  amount integer not null check (amount <> 0),
  type text not null check (type in ('signup_bonus', 'monthly_recurring', 'purchase', 'refund', 'admin_adjustment')),
  description text not null check (char_length(description) <= 500),
  item_id uuid,
  item_type text check (char_length(item_type) <= 50),
  reason text check (char_length(reason) <= 1000),
  source text check (char_length(source) <= 100),
  created_by uuid,
  created_at timestamptz not null default now(),
  constraint drops_transactions_manual_grants_have_reason
    check (type <> 'admin_adjustment' or (reason is not null and source is not null))
);
alter table public.drops_transactions enable row level security;
comment on table public.drops_transactions is
  'Append-only ledger of drops deltas; profiles.drops_balance is their sum per user.';
comment on column public.drops_transactions.amount is 'Signed delta: positive credits, negative debits.';
comment on column public.drops_transactions.created_by is 'Who made a manual grant (null for system rows).';
revoke all on public.drops_transactions from anon, authenticated, service_role;
grant select on public.drops_transactions to authenticated, service_role;
create index drops_transactions_user_history on public.drops_transactions (user_id, created_at desc, id desc);
create unique index drops_transactions_one_signup_bonus on public.drops_transactions (user_id)
  where type = 'signup_bonus';
create policy "drops_transactions: owners and super admins read" on public.drops_transactions
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- Applies a statement's deltas to the balances at once (one update per user touched).
create or replace function private.apply_drops_deltas() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  update public.profiles p
     set drops_balance = p.drops_balance + d.total
    from (select user_id, sum(amount)::integer as total from inserted group by user_id) d
   where p.id = d.user_id;
  return null;
end
$$;
create trigger drops_transactions_apply_to_balance
  after insert on public.drops_transactions
  referencing new table as inserted
  for each statement execute function private.apply_drops_deltas();

-- Rows are never changed or removed: a correction is a new row.
create or replace function private.forbid_ledger_changes() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  -- Deleting a user cascades to their rows: allowed once their profile is gone.
  if tg_op = 'DELETE' then
    if not exists (select 1 from public.profiles where id = old.user_id) then
      return old;
    end if;
  end if;
  -- An adjustment made by an admin whose account is deleted keeps its row, under the tombstone.
  if tg_op = 'UPDATE' then
    if private.only_tombstones_changed(to_jsonb(old), to_jsonb(new), array['created_by']) then
      return new;
    end if;
  end if;
  raise exception 'drops_transactions is append-only' using errcode = '42501';
end
$$;
create trigger drops_transactions_append_only
  before update or delete on public.drops_transactions
  for each row execute function private.forbid_ledger_changes();
create trigger drops_transactions_no_truncate
  before truncate on public.drops_transactions
  for each statement execute function private.forbid_ledger_changes();

-- The balance as the ledger says it should be.
create or replace function private.ledger_balance(target_user_id uuid) returns integer
language sql stable
set search_path = ''
as $$
  select coalesce(sum(amount), 0)::integer from public.drops_transactions where user_id = target_user_id
$$;

-- ---------------------------------------------------------------------------------------------
-- Signup bonus
-- ---------------------------------------------------------------------------------------------

-- 50 drops, once per user (the partial unique index makes a repeat a no-op).
create or replace function private.grant_signup_bonus() returns trigger
language plpgsql security definer
set search_path = ''
as $$
begin
  insert into public.drops_transactions (user_id, amount, type, description)
  values (new.id, 50, 'signup_bonus', 'Welcome bonus')
  on conflict (user_id) where type = 'signup_bonus' do nothing;
  return null;
end
$$;
create trigger profiles_signup_bonus
  after insert on public.profiles
  for each row execute function private.grant_signup_bonus();

-- ---------------------------------------------------------------------------------------------
-- Support: adjustments and recomputing a balance
-- ---------------------------------------------------------------------------------------------

-- Manual grants and corrections: super admins through the API; the SQL dashboard and the
-- service role directly (sql/admin/adjust_drops.sql). The RPC runs as the caller; the definer
-- in private checks who that is.
create or replace function private.admin_adjust_drops(
  target_user_id uuid,
  delta integer,
  reason text,
  source text default 'admin'
) returns public.drops_transactions
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.drops_transactions;
  violated text;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may adjust drops' using errcode = '42501';
  end if;
  if delta is null or delta = 0 then
    raise exception 'delta must be a non-zero integer' using errcode = '22023';
  end if;
  if reason is null or btrim(reason) = '' then
    raise exception 'reason is required' using errcode = '22023';
  end if;
  perform private.check_max_length('reason', btrim(reason), 1000);
  perform private.check_max_length('source', btrim(source), 100);
  if not exists (select 1 from public.profiles where id = target_user_id) then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  begin
    insert into public.drops_transactions (user_id, amount, type, description, reason, source, created_by)
    values (target_user_id, delta, 'admin_adjustment', 'Adjustment: ' || left(btrim(reason), 400),
            btrim(reason), coalesce(nullif(btrim(source), ''), 'admin'), (select auth.uid()))
    returning * into row;
  exception when check_violation then
    get stacked diagnostics violated = constraint_name;
    if violated = 'profiles_drops_balance_check' then
      raise exception 'insufficient drops: the balance cannot go below zero' using errcode = '23514';
    end if;
    raise;
  end;
  return row;
end
$$;
comment on function private.admin_adjust_drops(uuid, integer, text, text) is
  'Super admins, the service role and direct sessions: adds a signed admin_adjustment row with a reason.';
grant execute on function private.admin_adjust_drops(uuid, integer, text, text) to authenticated, service_role;
create or replace function public.admin_adjust_drops(
  target_user_id uuid,
  delta integer,
  reason text,
  source text default 'admin'
) returns public.drops_transactions
language sql security invoker
set search_path = ''
as $$ select * from private.admin_adjust_drops(target_user_id, delta, reason, source) $$;
comment on function public.admin_adjust_drops(uuid, integer, text, text) is
  'Adds a signed admin_adjustment row with a reason; refuses to take a balance below zero.';
grant execute on function public.admin_adjust_drops(uuid, integer, text, text) to authenticated;

-- Re-derives a stored balance from the ledger (support tool; a no-op when all is well).
create or replace function private.recompute_drops_balance(target_user_id uuid) returns integer
language plpgsql security definer
set search_path = ''
as $$
declare
  balance integer;
begin
  if not private.is_trusted_caller() then
    raise exception 'only super admins may recompute balances' using errcode = '42501';
  end if;
  perform 1 from public.profiles where id = target_user_id for update;
  if not found then
    raise exception 'no user %', target_user_id using errcode = 'PT404';
  end if;
  perform set_config('app.recomputing_balance', 'on', true);
  update public.profiles set drops_balance = private.ledger_balance(target_user_id)
   where id = target_user_id
  returning drops_balance into balance;
  perform set_config('app.recomputing_balance', 'off', true);
  return balance;
end
$$;
comment on function private.recompute_drops_balance(uuid) is
  'Super admins, the service role and direct sessions: re-derives a stored balance from the ledger.';
grant execute on function private.recompute_drops_balance(uuid) to authenticated, service_role;
create or replace function public.recompute_drops_balance(target_user_id uuid) returns integer
language sql security invoker
set search_path = ''
as $$ select private.recompute_drops_balance(target_user_id) $$;
grant execute on function public.recompute_drops_balance(uuid) to authenticated;

-- ---------------------------------------------------------------------------------------------
-- The monthly award
-- ---------------------------------------------------------------------------------------------
-- 30 drops, 250 for premium users, at most once per user per calendar month (UTC), enforced
-- by a primary key so two concurrent runs award once. The schedule (pg_cron job
-- award-monthly-drops) is in the migrations.

-- Premium: an active subscription (payments_email.sql). Not granted to clients: whether
-- someone else is premium is not theirs to ask.
create or replace function private.is_premium(target_user_id uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (select 1 from public.subscriptions where user_id = target_user_id and status = 'active')
$$;

create table public.monthly_drop_awards (
  user_id uuid not null references public.profiles (id) on delete cascade,
  award_month date not null check (extract(day from award_month) = 1),
  amount integer not null check (amount > 0),
  created_at timestamptz not null default now(),
  primary key (user_id, award_month)
);
alter table public.monthly_drop_awards enable row level security;
comment on table public.monthly_drop_awards is
  'One row per user and month awarded; the primary key makes a second award a no-op.';
revoke all on public.monthly_drop_awards from anon, authenticated;
grant select on public.monthly_drop_awards to authenticated;
create policy "monthly_drop_awards: owners and super admins read" on public.monthly_drop_awards
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

-- The month (UTC) the monthly drops award is for now.
create or replace function private.current_award_month() returns date
language sql stable
set search_path = ''
as $$ select date_trunc('month', now() at time zone 'UTC')::date $$;

/*
 * Awards the month to each active user among `candidates` (null: every user) who has not
 * had it yet, in one statement: the award rows (on conflict do nothing) and their ledger
 * rows. Returns how many users were awarded and how many were skipped (already awarded
 * this month, or inactive).
 */
create or replace function private.award_monthly_drops(candidates uuid[], award_month date)
returns table (awarded integer, skipped integer)
language sql
set search_path = ''
as $$
  with considered as (
    select p.id, p.is_active,
           case when private.is_premium(p.id) then 250 else 30 end as amount
      from public.profiles p
     where candidates is null or p.id = any (candidates)
  ),
  new_awards as (
    insert into public.monthly_drop_awards (user_id, award_month, amount)
    select id, award_month, amount from considered where is_active
    on conflict (user_id, award_month) do nothing
    returning user_id, amount
  ),
  ledger as (
    insert into public.drops_transactions (user_id, amount, type, description, item_type)
    select user_id, amount, 'monthly_recurring', 'Monthly drops for ' || to_char(award_month, 'YYYY-MM'), 'month'
      from new_awards
    returning user_id
  )
  select (select count(*) from ledger)::integer,
         ((select count(*) from considered) - (select count(*) from ledger))::integer
$$;

-- POST /api/drops/award-monthly: the caller's own month.
create or replace function private.award_my_monthly_drops()
returns table (awarded boolean, amount integer, award_month date, balance integer)
language plpgsql security definer
set search_path = ''
as $$
declare
  uid uuid := (select auth.uid());
  month date := private.current_award_month();
  result record;
begin
  if uid is null then
    raise exception 'sign in to receive monthly drops' using errcode = '42501';
  end if;
  select * into result from private.award_monthly_drops(array[uid], month);
  return query
    select result.awarded = 1, a.amount, month, p.drops_balance
      from public.profiles p
      left join public.monthly_drop_awards a on a.user_id = p.id and a.award_month = month
     where p.id = uid;
end
$$;
comment on function private.award_my_monthly_drops() is 'The signed-in caller''s monthly award (once per month).';
grant execute on function private.award_my_monthly_drops() to authenticated;
create or replace function public.award_monthly_drops()
returns table (awarded boolean, amount integer, award_month date, balance integer)
language sql security invoker
set search_path = ''
as $$ select * from private.award_my_monthly_drops() $$;
grant execute on function public.award_monthly_drops() to authenticated;

-- The monthly job (pg_cron, and POST /api/drops/cron/award-monthly-all): every user at once.
create or replace function private.award_everyone_monthly_drops()
returns table (awarded integer, skipped integer, award_month date)
language plpgsql security definer
set search_path = ''
as $$
declare
  month date := private.current_award_month();
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler, the service role or a super admin may award all users'
      using errcode = '42501';
  end if;
  return query select r.awarded, r.skipped, month from private.award_monthly_drops(null, month) r;
end
$$;
comment on function private.award_everyone_monthly_drops() is
  'The monthly job: every user''s award at once (scheduler, service role, super admins).';
grant execute on function private.award_everyone_monthly_drops() to authenticated, service_role;

-- pg_cron's monthly job: awards the month's drops to every user not yet awarded.
create or replace function public.award_monthly_drops_all()
returns table (awarded integer, skipped integer, award_month date)
language sql security invoker
set search_path = ''
as $$ select * from private.award_everyone_monthly_drops() $$;
grant execute on function public.award_monthly_drops_all() to authenticated;

-- The monthly job in chunks (POST /api/drops/cron/award-monthly-all calls it until done): the
-- next `chunk_size` users after `after_id` (and up to `until_id`, when walkers share the work
-- by id range) in id order (an index range of profiles_pkey), each
-- awarded unless already awarded this month. Each call is its own transaction (0.5-0.9 s for
-- 10,000 users), so no transaction holds locks for long, a killed run loses at most one chunk,
-- and a new run from the start completes the month (users already awarded are skipped by the
-- primary key: once per user per month). last_id is the cursor for the next call; null when
-- the walk is over.
create or replace function private.award_monthly_drops_chunk(after_id uuid, chunk_size integer, until_id uuid)
returns table (awarded integer, skipped integer, award_month date, last_id uuid)
language plpgsql security definer
set search_path = ''
as $$
declare
  month date := private.current_award_month();
  ids uuid[];
  result record;
begin
  if not private.is_trusted_caller() then
    raise exception 'only the scheduler, the service role or a super admin may award all users'
      using errcode = '42501';
  end if;
  if chunk_size is null or chunk_size not between 1 and 100000 then
    raise exception 'chunk_size: must be between 1 and 100000' using errcode = '22023';
  end if;
  select array_agg(c.id order by c.id) into ids
    from (select p.id from public.profiles p
           where p.id > coalesce(after_id, '00000000-0000-0000-0000-000000000000'::uuid)
             and p.id <= coalesce(until_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
           order by p.id limit chunk_size) c;
  if ids is null then
    return query select 0, 0, month, null::uuid;
    return;
  end if;
  -- As private.award_monthly_drops, for exactly these users (an index lookup each); premium
  -- (private.is_premium) as one join rather than a function call per user.
  with premium as (
    select distinct s.user_id from public.subscriptions s where s.user_id = any (ids) and s.status = 'active'
  ),
  considered as (
    select p.id, p.is_active, case when pr.user_id is not null then 250 else 30 end as amount
      from public.profiles p
      left join premium pr on pr.user_id = p.id
     where p.id = any (ids)
       and not exists (select 1 from public.monthly_drop_awards a where a.user_id = p.id and a.award_month = month)
  ),
  new_awards as (
    insert into public.monthly_drop_awards (user_id, award_month, amount)
    select c.id, month, c.amount from considered c where c.is_active
    on conflict on constraint monthly_drop_awards_pkey do nothing
    returning user_id, amount
  ),
  ledger as (
    insert into public.drops_transactions (user_id, amount, type, description, item_type)
    select n.user_id, n.amount, 'monthly_recurring', 'Monthly drops for ' || to_char(month, 'YYYY-MM'), 'month'
      from new_awards n
    returning user_id
  )
  select (select count(*) from ledger)::integer as awarded,
         (cardinality(ids) - (select count(*) from ledger))::integer as skipped
    into result;
  return query select result.awarded, result.skipped, month,
                      case when cardinality(ids) = chunk_size then ids[cardinality(ids)] end;
end
$$;
comment on function private.award_monthly_drops_chunk(uuid, integer, uuid) is
  'The monthly job, one chunk: the next chunk_size users after after_id, up to until_id (id order); last_id null when done.';
grant execute on function private.award_monthly_drops_chunk(uuid, integer, uuid) to authenticated, service_role;

create or replace function public.award_monthly_drops_chunk(
  after_id uuid default null, chunk_size integer default 10000, until_id uuid default null
) returns table (awarded integer, skipped integer, award_month date, last_id uuid)
language sql security invoker
set search_path = ''
as $$ select * from private.award_monthly_drops_chunk(after_id, chunk_size, until_id) $$;
comment on function public.award_monthly_drops_chunk(uuid, integer, uuid) is
  'The monthly job in chunks (scheduler, service role, super admins): call again with last_id until it is null; until_id ends a walker''s id range.';
grant execute on function public.award_monthly_drops_chunk(uuid, integer, uuid) to authenticated;
