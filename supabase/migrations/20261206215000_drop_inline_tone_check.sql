-- The inline tone analysis of PUT /api/journal is gone (the tone analysis queue decides what is
-- analysed, on every path): its pre-check, which let a caller spend their own daily cap, goes too.
drop function public.begin_entry_tone_analysis(uuid, text, integer);
drop function private.begin_entry_tone_analysis(uuid, text, integer);
