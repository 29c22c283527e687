-- Approved encouragement templates of each SPEC type (encouragement, media, science tidbit), so
-- a new project's users can follow the 429's advice ("send a template instead") from the start.
-- Reference rows: migrations only (docs/database.md). Fixed ids make this idempotent, and a
-- template a super admin has since edited, unapproved or deleted is left as it is.
insert into public.encouragement_templates (id, type, title, content, media_type, is_approved)
values
  ('5eed0000-0000-4000-8000-000000000001', 'encouragement', 'Keep going',
   'You showed up today, and that counts. Keep going!', null, true),
  ('5eed0000-0000-4000-8000-000000000002', 'encouragement', 'Proud of you',
   'I noticed the effort you are putting in. Proud of you.', null, true),
  ('5eed0000-0000-4000-8000-000000000003', 'encouragement', 'One step at a time',
   'Small steps still move you forward. One at a time.', null, true),
  ('5eed0000-0000-4000-8000-000000000004', 'encouragement', 'You have got this',
   'Whatever today brings, you have got this.', null, true),
  ('5eed0000-0000-4000-8000-000000000011', 'media', 'Image of the day',
   'A view from space to reset your day: https://www.nasa.gov/image-of-the-day/', 'image', true),
  ('5eed0000-0000-4000-8000-000000000012', 'media', 'A minute of calm',
   'Breathe along for a minute: https://www.youtube.com/watch?v=inpok4MKVLM', 'video', true),
  ('5eed0000-0000-4000-8000-000000000013', 'media', 'Something to listen to',
   'A song that always lifts me up, for your next walk: https://open.spotify.com/playlist/37i9dQZF1DXdPec7aLTmlC', 'audio', true),
  ('5eed0000-0000-4000-8000-000000000021', 'science_tidbit', 'Walking and ideas',
   'People come up with more creative ideas while walking than while sitting (Oppezzo and Schwartz, 2014).', null, true),
  ('5eed0000-0000-4000-8000-000000000022', 'science_tidbit', 'Writing it down',
   'Writing about a stressful event for 15 minutes a day on a few days can improve well-being (Pennebaker, 1997).', null, true),
  ('5eed0000-0000-4000-8000-000000000023', 'science_tidbit', 'Gratitude',
   'Noting three good things each day raised happiness for months in one study (Seligman et al., 2005).', null, true)
on conflict (id) do nothing;
