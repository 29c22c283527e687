// Tone packs (SPEC "Tone pack", "Tone analysis, images, tone packs", Drops currency 3). Who may
// see, use, change, share, activate and buy a pack is decided in SQL (the tone-packs schema
// file); these routes validate, call it with the caller's token and shape the reply.
import { routeModule } from '../../openapi.ts'
import { imageRoutes } from './images.ts'
import { packRoutes } from './packs.ts'
import { purchaseRoutes } from './purchase.ts'
import { sharingRoutes } from './sharing.ts'

// In this order the routes (and the OpenAPI document) read as before the split.
export const tonePackRoutes = routeModule()
  .route('/', packRoutes)
  .route('/', imageRoutes)
  .route('/', sharingRoutes)
  .route('/', purchaseRoutes)
