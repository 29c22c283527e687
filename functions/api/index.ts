// Entry point on Supabase (and `deno run`): serves the /api/... router.
import { handler } from './handler.ts'

Deno.serve(handler)
