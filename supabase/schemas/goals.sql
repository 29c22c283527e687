-- =============================================================================================
-- Goals
-- =============================================================================================
-- Accountability goals and their check-ins: private to their owner (super admins read all).

create table public.goals (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  title text not null check (char_length(btrim(title)) between 1 and 200),
  description text not null default '' check (char_length(description) <= 5000),
  target_date date,
  status text not null default 'active' check (char_length(status) between 1 and 30),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  row_version xid8 not null default pg_current_xact_id(),
  created_version xid8 not null default pg_current_xact_id()
);
alter table public.goals enable row level security;
comment on table public.goals is 'Accountability goals; status active by default.';
revoke all on public.goals from anon, authenticated;
grant select, delete on public.goals to authenticated;
grant insert (id, title, description, target_date, status), update (title, description, target_date, status)
  on public.goals to authenticated;
create index goals_by_owner on public.goals (user_id, created_at desc, id desc);
-- A create repeated with its client-chosen id (conventions.sql): a retry, or a conflict.
create trigger goals_reused_id before insert on public.goals
  for each row execute function private.refuse_reused_id('title', 'description', 'target_date', 'status');
-- A device's pull (sync.sql) reads its owner's changes at or above its cursor.
create index goals_sync on public.goals (user_id, row_version);
create policy "goals: owners and super admins read" on public.goals
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "goals: owners create" on public.goals
  for insert to authenticated with check (user_id = (select auth.uid()));
create policy "goals: owners update" on public.goals
  for update to authenticated using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy "goals: owners delete" on public.goals
  for delete to authenticated using (user_id = (select auth.uid()));
create trigger goals_touch before update on public.goals
  for each row execute function private.touch_updated_at();

-- The columns' rules in words (conventions.sql, "Field rules in words"), as /api says them.
create or replace function private.check_goal_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('title', new.title);
  perform private.check_length('title', btrim(new.title), 200);
  perform private.check_required('description', new.description);
  perform private.check_max_length('description', new.description, 5000);
  perform private.check_required('status', new.status);
  perform private.check_length('status', new.status, 30);
  return new;
end
$$;
create trigger goals_check_fields before insert or update of title, description, status on public.goals
  for each row execute function private.check_goal_fields();

create table public.goal_check_ins (
  id uuid primary key default gen_random_uuid(),
  goal_id uuid not null references public.goals (id) on delete cascade,
  user_id uuid not null default auth.uid() references public.profiles (id) on delete cascade,
  status text not null default 'completed' check (char_length(status) between 1 and 30),
  notes text not null default '' check (char_length(notes) <= 5000),
  created_at timestamptz not null default now(),
  row_version xid8 not null default pg_current_xact_id(),
  created_version xid8 not null default pg_current_xact_id()
);
alter table public.goal_check_ins enable row level security;
comment on table public.goal_check_ins is 'Check-ins recorded on a goal by its owner.';
revoke all on public.goal_check_ins from anon, authenticated;
grant select on public.goal_check_ins to authenticated;
grant insert (id, goal_id, status, notes)
  on public.goal_check_ins to authenticated;
create index goal_check_ins_by_goal on public.goal_check_ins (goal_id, created_at desc);
create trigger goal_check_ins_reused_id before insert on public.goal_check_ins
  for each row execute function private.refuse_reused_id('goal_id', 'status', 'notes');
-- A device's pull (sync.sql) reads its owner's changes at or above its cursor.
create index goal_check_ins_sync on public.goal_check_ins (user_id, row_version);

-- The columns' rules in words (conventions.sql, "Field rules in words"), as /api says them.
create or replace function private.check_goal_check_in_fields() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  perform private.check_required('goal_id', new.goal_id);
  perform private.check_required('status', new.status);
  perform private.check_length('status', new.status, 30);
  perform private.check_required('notes', new.notes);
  perform private.check_max_length('notes', new.notes, 5000);
  return new;
end
$$;
create trigger goal_check_ins_check_fields before insert or update of goal_id, status, notes on public.goal_check_ins
  for each row execute function private.check_goal_check_in_fields();
create policy "goal_check_ins: owners and super admins read" on public.goal_check_ins
  for select to authenticated
  using (user_id = (select auth.uid()) or (select private.is_super_admin()));
create policy "goal_check_ins: owners check in on their own goals" on public.goal_check_ins
  for insert to authenticated
  with check (
    user_id = (select auth.uid())
    and exists (select 1 from public.goals g where g.id = goal_id and g.user_id = (select auth.uid()))
  );
