import { app } from './app.ts'

export const handler = (req: Request) => app.fetch(req)
