-- =============================================================================================
-- Workout windows: reviewing check-ins
-- =============================================================================================
-- The super admins' review queue and verdicts (routes/workout/review.ts). The area's overview:
-- workout/shared.sql.

-- The check-ins waiting for review (or of another status): trusted callers only, so everything, computed once.
create or replace function private.workout_review_queue(review_status text, page_size integer, before_created_at timestamptz)
returns jsonb
language plpgsql stable security definer
set search_path = ''
as $$
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if review_status not in ('pending', 'verified', 'rejected') then
    raise exception 'status: must be one of pending, verified, rejected' using errcode = '22023';
  end if;
  return (select coalesce(jsonb_agg(private.workout_checkin_json(k, true)
                                      || jsonb_build_object('user', private.workout_user_card(k.user_id))
                                    order by k.created_at desc, k.id desc), '[]'::jsonb)
            from (select * from public.workout_checkins k
                   where k.status = review_status and (before_created_at is null or k.created_at < before_created_at)
                   order by k.created_at desc, k.id desc limit least(greatest(page_size, 1), 200)) k);
end
$$;
grant execute on function private.workout_review_queue(text,integer,timestamp with time zone) to authenticated, service_role;

create or replace function public.workout_review_queue(review_status text default 'pending', page_size integer default 50, before_created_at timestamptz default null)
returns jsonb
language sql stable set search_path = '' as $$ select private.workout_review_queue(review_status, page_size, before_created_at) $$;
comment on function public.workout_review_queue(text, integer, timestamptz) is 'Super admins: check-ins by status, newest first.';
grant execute on function workout_review_queue(text,integer,timestamp with time zone) to authenticated, service_role;

-- After a review, the user's check-ins on the following consecutive days get their streak
-- (and the seventh-day bonus of their chips) recomputed from the reviewed one: a rejected day
-- breaks the streak. Stops at the first gap or the first streak that is already right.
create or replace function private.recompute_later_streaks(reviewed public.workout_checkins)
returns void
language plpgsql
set search_path = ''
as $$
declare
  k public.workout_checkins;
  prev_date date := reviewed.date;
  prev_streak integer := case when reviewed.status = 'rejected' then 0 else reviewed.streak_days end;
begin
  for k in select * from public.workout_checkins c
            where c.user_id = reviewed.user_id and c.date > reviewed.date and c.status <> 'rejected'
            order by c.date for update loop
    exit when k.date <> prev_date + 1 or k.streak_days = prev_streak + 1;
    update public.workout_checkins
       set streak_days = prev_streak + 1,
           battle_chips_earned = greatest(0, battle_chips_earned - case when k.streak_days >= 7 then 2 else 0 end
                                             + case when prev_streak + 1 >= 7 then 2 else 0 end)
     where id = k.id;
    prev_date := k.date;
    prev_streak := prev_streak + 1;
  end loop;
end
$$;

-- Super admins: verify or reject (with a reason) a check-in.
create or replace function private.review_workout_checkin(checkin_id uuid, verdict text, reason text)
returns jsonb
language plpgsql security definer
set search_path = ''
as $$
declare
  row public.workout_checkins;
begin
  if not private.is_trusted_caller() then
    raise exception 'super admins only' using errcode = '42501';
  end if;
  if verdict not in ('verified', 'rejected') then
    raise exception 'verdict: must be verified or rejected' using errcode = '22023';
  end if;
  if verdict = 'rejected' and (reason is null or btrim(reason) = '') then
    raise exception 'reason: required to reject' using errcode = '22023';
  end if;
  update public.workout_checkins
     set status = verdict, review_reason = nullif(btrim(coalesce(reason, '')), ''),
         reviewed_by = (select auth.uid()), reviewed_at = now()
   where id = checkin_id
  returning * into row;
  if not found then
    raise exception 'no check-in %', checkin_id using errcode = 'PT404';
  end if;
  perform private.recompute_later_streaks(row);
  if verdict = 'rejected' then
    perform private.notify(row.user_id, 'workout.checkin_rejected',
      jsonb_build_object('checkinId', row.id, 'date', row.date, 'reason', row.review_reason));
  end if;
  return private.workout_checkin_json(row);
end
$$;
grant execute on function private.review_workout_checkin(uuid,text,text) to authenticated, service_role;

create or replace function public.review_workout_checkin(checkin_id uuid, verdict text, reason text default null)
returns jsonb
language sql set search_path = '' as $$ select private.review_workout_checkin(checkin_id, verdict, reason) $$;
comment on function public.review_workout_checkin(uuid, text, text) is 'Super admins: verify or reject (with a reason) a check-in.';
grant execute on function review_workout_checkin(uuid,text,text) to authenticated, service_role;
