// Where each stack lives: `npm start` on Supabase's usual local ports, `npm test` beside it.
// Test and bench stacks sit below Linux's ephemeral range (32768+), where an outgoing
// connection could hold the port. TEST_PORT_BASE moves the test stack.
import { ROOT } from './proc.ts'

export const DEV = { dataDir: `${ROOT}/.local`, apiPort: 54321, dbPort: 54322, restPort: 54330, inboxPort: 54324 }

const base = Number(Deno.env.get('TEST_PORT_BASE') ?? 25321)
export const TEST = { apiPort: base, dbPort: base + 1, restPort: base + 9, inboxPort: base + 3 }
/** The client tests' web page (http://localhost:<pagePort>, an allowed redirect of the test
 *  stack's Auth) and the DevTools port of the Chromium that opens it. */
export const CLIENT_TEST = { pagePort: base + 40, browserDebugPort: base + 41 }
