import { isIP } from 'node:net';
import path from 'node:path';
import * as z from 'zod';

/** Shorter tokens are refused at start: the sign-in form is reachable by anyone who can reach PORT. */
export const MIN_TOKEN_CHARS = 16;

export interface DashboardConfig {
  /** HERMES_DASHBOARD_TOKEN: the one credential; the dashboard exists only when it is set. */
  token: string;
  /** Where `npm run eval` writes its result files (evals/results under the working folder). */
  evalsDir: string;
  /**
   * HERMES_DASHBOARD_HOST: the address the bot's HTTP server binds when only the dashboard needs it
   * (default 127.0.0.1, this machine only). In Slack HTTP mode the server listens on every
   * interface for Slack's events and this is unused (src/app/bot-http.ts `listenHost`).
   */
  host: string;
}

/** A hostname (RFC 1123 labels) or an IP literal: what `server.listen` can bind. */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The dashboard's part of the environment (see src/settings/env-schema.ts for how areas combine). */
export const dashboardEnv = (cwd: string) =>
  z
    .object({
      HERMES_DASHBOARD_TOKEN: z
        .string()
        .min(MIN_TOKEN_CHARS, {
          error: `is too short: use at least ${MIN_TOKEN_CHARS} random characters (e.g. the output of \`openssl rand -hex 24\`), or unset it to turn the dashboard off.`,
        })
        .optional(),
      HERMES_DASHBOARD_HOST: z
        .string()
        .refine((h) => isIP(h) !== 0 || HOST_NAME.test(h), {
          error: 'is not an address to listen on: use an IP address such as 127.0.0.1 (this machine only, the default) or 0.0.0.0 (every interface), or a host name.',
        })
        .default('127.0.0.1'),
    })
    .transform((e): DashboardConfig | undefined =>
      e.HERMES_DASHBOARD_TOKEN === undefined ? undefined : { token: e.HERMES_DASHBOARD_TOKEN, evalsDir: path.resolve(cwd, 'evals', 'results'), host: e.HERMES_DASHBOARD_HOST },
    );
