// Tone packs (issue 8): not built yet.
import { routeModule } from '../openapi.ts'

export const tonePackRoutes = routeModule()
