import path from 'node:path';
import { z } from 'zod';

/** Shorter tokens are refused at start: the sign-in form is reachable by anyone who can reach PORT. */
export const MIN_TOKEN_CHARS = 16;

export interface DashboardConfig {
  /** HERMES_DASHBOARD_TOKEN: the one credential; the dashboard exists only when it is set. */
  token: string;
  /** Where `npm run eval` writes its result files (evals/results under the working folder). */
  evalsDir: string;
}

/** The dashboard's part of the environment (see src/settings/config.ts for how areas combine). */
export const dashboardEnv = (cwd: string) =>
  z
    .object({
      HERMES_DASHBOARD_TOKEN: z
        .string()
        .min(MIN_TOKEN_CHARS, {
          error: `is too short: use at least ${MIN_TOKEN_CHARS} random characters (e.g. the output of \`openssl rand -hex 24\`), or unset it to turn the dashboard off.`,
        })
        .optional(),
    })
    .transform((e): DashboardConfig | undefined => (e.HERMES_DASHBOARD_TOKEN === undefined ? undefined : { token: e.HERMES_DASHBOARD_TOKEN, evalsDir: path.resolve(cwd, 'evals', 'results') }));
