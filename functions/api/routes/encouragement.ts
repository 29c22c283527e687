// Encouragement drops and badges (issue 10): not built yet.
import { routeModule } from '../openapi.ts'

export const encouragementRoutes = routeModule()
