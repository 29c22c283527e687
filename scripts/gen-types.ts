// npm run gen:types: regenerates types/database.ts from the running local database (npm start),
// or from SUPABASE_DB_URL.
import { dbUrl } from './lib/db.ts'
import { DEV } from './lib/ports.ts'
import { generateTypes, TYPES_FILE } from './lib/types.ts'

const url = Deno.env.get('SUPABASE_DB_URL') ?? dbUrl(DEV.dbPort)
try {
  await Deno.writeTextFile(TYPES_FILE, await generateTypes(url))
  console.log('Wrote types/database.ts')
} catch (e) {
  console.error(`npm run gen:types: ${(e as Error).message}\nIs the local stack running (npm start)?`)
  Deno.exit(1)
}
