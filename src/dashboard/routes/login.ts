/**
 * The login form and logout. A correct token sets the session cookie:
 * HttpOnly, SameSite=Strict, Path=basePath, and Secure when the request came
 * over https (directly, or as X-Forwarded-Proto from the ingress). After login
 * the browser goes back to `next`, which must be a path under basePath (never
 * another site).
 */
import type { Context, Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { Auth } from '../auth.ts';
import { SESSION_COOKIE } from '../auth.ts';
import type { ViewContext } from '../views/layout.ts';
import { loginPage } from '../views/message.ts';

export function safeNext(next: unknown, base: string): string {
  if (typeof next !== 'string' || !next.startsWith(base) || next.startsWith('//') || /[\\\s]/.test(next)) return base;
  return next;
}

function secure(c: Context): boolean {
  const proto = c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  return proto === 'https' || new URL(c.req.url).protocol === 'https:';
}

export function loginRoutes(app: Hono, deps: { view: ViewContext; auth: Auth }): void {
  const { view, auth } = deps;
  const cookiePath = view.base === '/' ? '/' : view.base.slice(0, -1);
  app.get('/login', (c) => {
    if (!auth.required) return c.redirect(view.base, 303);
    return c.html(loginPage(view, safeNext(c.req.query('next'), view.base), false));
  });
  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const next = safeNext(form.next, view.base);
    if (!auth.required) return c.redirect(next, 303);
    if (typeof form.token !== 'string' || !auth.matches(form.token)) return c.html(loginPage(view, next, true), 401);
    setCookie(c, SESSION_COOKIE, auth.sessionValue(), {
      httpOnly: true,
      sameSite: 'Strict',
      path: cookiePath,
      secure: secure(c),
    });
    return c.redirect(next, 303);
  });
  app.post('/logout', (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: cookiePath, secure: secure(c) });
    return c.redirect(auth.required ? `${view.base}login` : view.base, 303);
  });
}
