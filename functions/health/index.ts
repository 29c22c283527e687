// Entry point on Supabase (and `deno run`): GET /health.
import { handler } from './handler.ts'

Deno.serve(handler)
