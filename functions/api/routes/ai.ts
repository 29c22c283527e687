// Tone analysis, entry backgrounds, token usage (issue 7): not built yet.
import { routeModule } from '../openapi.ts'

export const aiRoutes = routeModule()
