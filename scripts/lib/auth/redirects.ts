// Where Auth may send the browser after a link: GoTrue's isRedirectURLValid. The site_url's
// host, or an entry of additional_redirect_urls (with * and ** globs); anything else falls
// back to site_url, so a link can never send a session to a foreign site.
import type { AuthContext } from './sessions.ts'

function globToRegExp(pattern: string): RegExp {
  const escape = (part: string) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/.]*')
  return new RegExp(`^${pattern.split('**').map(escape).join('.*')}$`)
}

export function isRedirectAllowed(ctx: AuthContext, url: string): boolean {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return false
  }
  try {
    if (new URL(ctx.config.siteUrl).hostname === target.hostname) return true
  } catch { /* a bad site_url allows nothing by host */ }
  return ctx.config.additionalRedirectUrls.some((p) => globToRegExp(p).test(url))
}

/** The redirect_to a request asked for, if allowed, else site_url. */
export function redirectTarget(ctx: AuthContext, asked: string | null | undefined): string {
  return asked && isRedirectAllowed(ctx, asked) ? asked : ctx.config.siteUrl
}
