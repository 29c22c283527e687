// Where each stack lives: `npm start` on Supabase's usual local ports, `npm test` beside it.
import { ROOT } from './proc.ts'

export const DEV = { dataDir: `${ROOT}/.local`, apiPort: 54321, dbPort: 54322, restPort: 54330 }
export const TEST = { apiPort: 55321, dbPort: 55322, restPort: 55330 }
