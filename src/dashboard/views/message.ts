/** The login form and plain message pages (errors, refusals). */
import { html } from 'hono/html';
import { layout, type ViewContext } from './layout.ts';

export function loginPage(v: ViewContext, next: string, failed: boolean) {
  const body = html`<h1>Log in</h1>
    ${failed ? html`<p class="flash error" role="alert">That token is not right.</p>` : ''}
    <form method="post" action="${v.base}login">
      <input type="hidden" name="next" value="${next}" />
      <label>Dashboard token <input type="password" name="token" autocomplete="current-password" autofocus /></label>
      <button type="submit">Log in</button>
    </form>`;
  return layout({ ...v, authRequired: false }, 'Log in', 'login', body);
}

export function messagePage(v: ViewContext, title: string, text: string) {
  return layout(
    v,
    title,
    '',
    html`<h1>${title}</h1>
      <p class="flash error" role="alert">${text}</p>`,
  );
}
