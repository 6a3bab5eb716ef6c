import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { scriptedModel } from '../../src/operations/eval/scripted-model.js';
import type { SuiteHooks } from '../../src/operations/eval/run-suite.js';

/**
 * The scripted model behind the fake OpenAI server: the real SDK and provider talk HTTP to it,
 * and each case's script supplies the replies.
 */
export interface ScriptedFake {
  fake: FakeOpenAI;
  env: Record<string, string>;
  hooks: SuiteHooks;
  close(): Promise<void>;
}

export async function startScriptedFake(): Promise<ScriptedFake> {
  const fake = await startFakeOpenAI();
  return {
    fake,
    env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key', HERMES_MODEL: 'gpt-4o-mini', HERMES_MODEL_RETRIES: '0' },
    hooks: {
      beforeCase(c) {
        const model = scriptedModel(c.script ?? []);
        fake.setHandler((req) => model.next(req));
      },
    },
    close: () => fake.close(),
  };
}
