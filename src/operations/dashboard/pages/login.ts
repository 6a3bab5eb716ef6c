import { html } from '../html.js';
import { BASE, layout, notice } from './layout.js';

/** What a person reads at the sign-in form (each message in one place). */
export const SIGN_IN_TEXT = {
  wrongToken: 'That token is not right. Check HERMES_DASHBOARD_TOKEN in the bot\'s settings.',
  tooMany: (minutes: number) => `Too many failed sign-ins from your address. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
  signedOut: 'You are signed out.',
  expired: 'Please sign in to see the dashboard.',
} as const;

export function loginPage(opts: { message?: string; error?: boolean; next?: string }) {
  const body = html`<div class="login"><h1>Sign in</h1>
${opts.message ? notice(opts.message, opts.error ? 'error' : 'info') : ''}
<form method="post" action="${BASE}/login">
<label for="token">Dashboard token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
${opts.next ? html`<input type="hidden" name="next" value="${opts.next}">` : ''}
<button type="submit">Sign in</button>
</form>
<p class="muted">The token is HERMES_DASHBOARD_TOKEN from the bot's settings.</p></div>`;
  return layout('Sign in', body, { signedIn: false });
}
