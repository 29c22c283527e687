-- The drops ledger: an append-only table of signed deltas. profiles.drops_balance is kept
-- equal to the sum of a user's deltas by a statement trigger in the same transaction; the
-- profile's check constraint (balance >= 0) refuses any write that would go below zero.

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
comment on table public.drops_transactions is
  'Append-only ledger of drops deltas; profiles.drops_balance is their sum per user.';
comment on column public.drops_transactions.amount is 'Signed delta: positive credits, negative debits.';
comment on column public.drops_transactions.created_by is 'Who made a manual grant (null for system rows).';

create index drops_transactions_user_history on public.drops_transactions (user_id, created_at desc, id desc);
create unique index drops_transactions_one_signup_bonus on public.drops_transactions (user_id)
  where type = 'signup_bonus';

alter table public.drops_transactions enable row level security;
revoke all on public.drops_transactions from anon, authenticated, service_role;
grant select on public.drops_transactions to authenticated, service_role;

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
  raise exception 'drops_transactions is append-only' using errcode = '42501';
end
$$;

create trigger drops_transactions_append_only
  before update or delete on public.drops_transactions
  for each row execute function private.forbid_ledger_changes();

create trigger drops_transactions_no_truncate
  before truncate on public.drops_transactions
  for each statement execute function private.forbid_ledger_changes();

-- Signup bonus: 50 drops, once per user (the partial unique index makes a repeat a no-op).
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

-- Manual support grants and corrections. Super admins through the API; the SQL dashboard
-- and the service role directly (see sql/admin/adjust_drops.sql).
create or replace function public.admin_adjust_drops(
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
  if not exists (select 1 from public.profiles where id = target_user_id) then
    raise exception 'no user %', target_user_id using errcode = 'P0002';
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
comment on function public.admin_adjust_drops(uuid, integer, text, text) is
  'Adds a signed admin_adjustment row with a reason; refuses to take a balance below zero.';
grant execute on function public.admin_adjust_drops(uuid, integer, text, text) to authenticated, service_role;

-- The balance as the ledger says it should be.
create or replace function private.ledger_balance(target_user_id uuid) returns integer
language sql stable
set search_path = ''
as $$
  select coalesce(sum(amount), 0)::integer from public.drops_transactions where user_id = target_user_id
$$;

-- Re-derives a stored balance from the ledger (support tool; a no-op when all is well).
create or replace function public.recompute_drops_balance(target_user_id uuid) returns integer
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
    raise exception 'no user %', target_user_id using errcode = 'P0002';
  end if;
  perform set_config('app.recomputing_balance', 'on', true);
  update public.profiles set drops_balance = private.ledger_balance(target_user_id)
   where id = target_user_id
  returning drops_balance into balance;
  perform set_config('app.recomputing_balance', 'off', true);
  return balance;
end
$$;
grant execute on function public.recompute_drops_balance(uuid) to authenticated, service_role;
