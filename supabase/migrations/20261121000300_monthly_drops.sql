-- Subscriptions (who is premium) and the monthly drops award: 30 drops, 250 for premium
-- users, at most once per user per calendar month (UTC), enforced by a primary key so two
-- concurrent runs award once.

create table public.subscriptions (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references public.profiles (id) on delete cascade,
  stripe_customer_id text,
  stripe_subscription_id text unique,
  status text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
comment on table public.subscriptions is
  'Payment-provider subscriptions; a user is premium while one has status active. Written by the payment webhook.';
create index subscriptions_user_status on public.subscriptions (user_id, status);

alter table public.subscriptions enable row level security;
-- Read-only for clients, and the provider ids are not granted to them at all.
revoke all on public.subscriptions from anon, authenticated;
grant select (id, user_id, status, created_at, updated_at) on public.subscriptions to authenticated;

create policy "subscriptions: owners and super admins read" on public.subscriptions
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

create or replace function private.is_premium(target_user_id uuid) returns boolean
language sql stable security definer
set search_path = ''
as $$
  select exists (select 1 from public.subscriptions where user_id = target_user_id and status = 'active')
$$;
-- Not granted to clients: whether someone else is premium is not theirs to ask.

create table public.monthly_drop_awards (
  user_id uuid not null references public.profiles (id) on delete cascade,
  award_month date not null check (extract(day from award_month) = 1),
  amount integer not null check (amount > 0),
  created_at timestamptz not null default now(),
  primary key (user_id, award_month)
);
comment on table public.monthly_drop_awards is
  'One row per user and month awarded; the primary key makes a second award a no-op.';

alter table public.monthly_drop_awards enable row level security;
revoke all on public.monthly_drop_awards from anon, authenticated;
grant select on public.monthly_drop_awards to authenticated;

create policy "monthly_drop_awards: owners and super admins read" on public.monthly_drop_awards
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));

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
create or replace function public.award_monthly_drops()
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
grant execute on function public.award_monthly_drops() to authenticated;

-- The monthly job (pg_cron, and POST /api/drops/cron/award-monthly-all): every user at once.
create or replace function public.award_monthly_drops_all()
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
grant execute on function public.award_monthly_drops_all() to authenticated, service_role;

select cron.schedule('award-monthly-drops', '0 0 1 * *', 'select public.award_monthly_drops_all()');
