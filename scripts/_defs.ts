import { definitionProblems, definitionsIn, schemaFiles } from './lib/schemas.ts'
const url = Deno.args[0] ?? 'postgresql://postgres:postgres@127.0.0.1:21371/postgres'
console.log(definitionsIn(schemaFiles()).length, 'definitions')
const p = await definitionProblems(url)
console.log(p.join('\n')); console.log(p.length, 'problems')
