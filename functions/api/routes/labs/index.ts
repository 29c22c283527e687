// Labs (SPEC "Experiment-community admin and related", "Super-admin managed records", other
// admin rules): submissions and their review, classroom accounts, experiment templates, clones
// and replications, the optimizer, competitions, step prompts, sponsor outreach, the kit
// waitlist. Every rule (who sees what, state moves, caps) is in SQL (the labs schema file);
// these routes validate, call it with the caller's token and shape the reply.
import { routeModule } from '../../openapi.ts'
import { competitionRoutes } from './competitions.ts'
import { experimentRoutes } from './experiments.ts'
import { kitWaitlistRoutes } from './kit_waitlist.ts'
import { optimizerRoutes } from './optimizer.ts'
import { outreachRoutes } from './outreach.ts'
import { submissionsRoutes } from './submissions.ts'

// In this order the routes (and the OpenAPI document) read as before the split.
export const labsRoutes = routeModule()
  .route('/', submissionsRoutes)
  .route('/', experimentRoutes)
  .route('/', optimizerRoutes)
  .route('/', competitionRoutes)
  .route('/', outreachRoutes)
  .route('/', kitWaitlistRoutes)
