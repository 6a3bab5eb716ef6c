import path from 'node:path';
import type { Logger } from 'pino';
import { secretValues } from '../../settings/config-secrets.js';
import type { Config } from '../../settings/config.js';
import { lazyOpenAIProvider } from '../../runtime/provider/lazy-provider.js';
import { toToolSpec } from '../../capabilities/toolkit/json-schema.js';
import type { ToolRegistry } from '../../capabilities/toolkit/registry.js';
import { createDashboard, type Dashboard } from './dashboard.js';
import type { AuditLog } from '../../state/audit/audit-log.js';
import type { FeedbackReader } from '../../state/feedback/feedback-store.js';

/**
 * The dashboard as the bot runs it: traces from HERMES_DATA_DIR/traces, eval results from
 * evals/results, and replay against the configured OpenAI-compatible server with any model name.
 */
export function createBotDashboard(config: Config & { dashboard: NonNullable<Config['dashboard']> }, registry: ToolRegistry, log: Logger, audit?: Pick<AuditLog, 'list'>, feedback?: FeedbackReader): Dashboard {
  const quiet = log.child({ component: 'dashboard-replay' });
  return createDashboard({
    token: config.dashboard.token,
    secrets: secretValues(config),
    tracesDir: path.join(config.dataDir, 'traces'),
    evalsDir: config.dashboard.evalsDir,
    log: log.child({ component: 'dashboard' }),
    ...(audit && { audit }),
    ...(feedback && { feedback }),
    replay: {
      defaultModel: config.model.name,
      provider: (model) => lazyOpenAIProvider({ ...config.model, model, log: quiet }),
      // Every registered tool, visible or not: the replay offers exactly what the recording offered.
      specs: () => registry.names().flatMap((n) => {
        const tool = registry.get(n);
        return tool ? [toToolSpec(tool)] : [];
      }),
      maxSteps: config.limits.maxSteps * 5,
    },
  });
}
