// Workout windows (issue 11): not built yet.
import { routeModule } from '../openapi.ts'

export const workoutRoutes = routeModule()
