-- One validation vocabulary: private.required_text (the RPCs' required texts, labs and
-- impersonation) now says what private.check_length says, with its SQLSTATE: "<field>: must not
-- be empty" / "<field>: must be at most N characters" (23514), instead of "required" / "at most
-- N characters" (22023). Both are 400 naming the field through /api and PostgREST alike.
create or replace function private.required_text(value text, field text, max_length integer) returns text
language plpgsql immutable
set search_path = ''
as $$
begin
  perform private.check_length(field, btrim(coalesce(value, '')), max_length);
  return btrim(value);
end
$$;
comment on function private.required_text(text, text, integer) is
  'A required text argument, trimmed; refused (23514, naming the field, as check_length words it) when missing, blank or too long.';
