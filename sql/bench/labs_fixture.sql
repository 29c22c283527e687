-- Labs bench fixture (scripts/bench/labs.ts): 10,000 participants in one active, open
-- competition, each with 0..9 activity events of every kind inside its window, and a retired
-- competition whose participants the recompute must not touch. Idempotent: reruns reuse it.
insert into auth.users (id, email)
select ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench-labs-' || g || '@example.test'
  from generate_series(1, 10000) g
on conflict do nothing;

insert into public.labs_competitions (id, slug, title, starts_at)
values ('b1300000-0000-4000-8000-00000000c0de', 'bench-labs-cup', 'Bench cup', now() - interval '30 days'),
       ('b1300000-0000-4000-8000-00000000dead', 'bench-labs-retired', 'Retired cup', now() - interval '60 days')
on conflict do nothing;
update public.labs_competitions set is_active = false where id = 'b1300000-0000-4000-8000-00000000dead';

insert into public.labs_competition_participants (competition_id, user_id)
select c.id, ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid
  from generate_series(1, 10000) g
 cross join (values ('b1300000-0000-4000-8000-00000000c0de'::uuid), ('b1300000-0000-4000-8000-00000000dead'::uuid)) c(id)
on conflict do nothing;

insert into public.labs_activity_events (user_id, kind, created_at)
select ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
       (array['clone', 'completion', 'replication_confirmed', 'replication_refuted', 'build'])[1 + (g + e) % 5],
       now() - ((g * 7 + e * 13) % (40 * 24)) * interval '1 hour'
  from generate_series(1, 10000) g
 cross join generate_series(1, 9) e
 where e <= g % 10
   and not exists (select 1 from public.labs_activity_events x where x.user_id = ('b1300000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid);

analyze public.labs_activity_events;
analyze public.labs_competition_participants;
