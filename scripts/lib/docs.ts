// GET /docs on the local gateway: Swagger UI (from npm's swagger-ui-dist, nothing from a CDN)
// rendering the api function's OpenAPI document. Hosted Supabase serves a function's HTML as
// plain text, so this page is local only (docs/api.md: "The API describes itself").
import { ROOT } from './proc.ts'

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Journal & accountability API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: '/functions/v1/api/openapi.json',
      dom_id: '#swagger-ui',
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: 'StandaloneLayout',
      persistAuthorization: true,
    })
  </script>
</body>
</html>`

/** The docs page or one of its assets; null when the path is not under /docs. */
export async function handleDocs(path: string): Promise<Response | null> {
  if (path === '/docs' || path === '/docs/') {
    return new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } })
  }
  if (!path.startsWith('/docs/')) return null
  const name = path.slice('/docs/'.length)
  const type = ASSETS[name]
  if (!type) return new Response(JSON.stringify({ error: `No docs asset ${name}` }), { status: 404, headers: { 'content-type': 'application/json' } })
  const bytes = await Deno.readFile(`${ROOT}/node_modules/swagger-ui-dist/${name}`)
  return new Response(bytes, { headers: { 'content-type': type, 'cache-control': 'public, max-age=3600' } })
}
