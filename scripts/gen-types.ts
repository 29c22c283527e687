// npm run gen:types: regenerates types/database.ts from the running local database (npm start),
// or from SUPABASE_DB_URL.
import { dbUrl } from './lib/db.ts'
import { DEV } from './lib/ports.ts'
import { ENUMS_FILE, enumsModule, generateTypes, TYPES_FILE } from './lib/types.ts'

const url = Deno.env.get('SUPABASE_DB_URL') ?? dbUrl(DEV.dbPort)
try {
  const types = await generateTypes(url)
  await Deno.writeTextFile(TYPES_FILE, types)
  await Deno.writeTextFile(ENUMS_FILE, enumsModule(types))
  console.log('Wrote types/database.ts and functions/_shared/database_enums.ts')
} catch (e) {
  console.error(`npm run gen:types: ${(e as Error).message}\nIs the local stack running (npm start)?`)
  Deno.exit(1)
}
