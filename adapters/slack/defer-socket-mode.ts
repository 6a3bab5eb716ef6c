import { createRequire } from 'node:module';

/**
 * Bolt's App module requires its Socket Mode receiver, and with it `@slack/socket-mode` (its
 * WebSocket client, `ws` and undici: 117 files, ~12 MB of RSS and a few hundred ms of a cold
 * start), whether or not the app runs in Socket Mode. In HTTP mode nothing of it is ever used.
 * Its HTTP and Socket Mode receivers require `@slack/oauth` (with jsonwebtoken, jws and semver:
 * ~80 files) for an installer that is made only when an OAuth client id is configured, which
 * hermes never does, in either mode.
 *
 * Called before Bolt is first loaded (src/main.ts does), each of these puts a stand-in for its
 * package in the CommonJS module cache: the first time anything reads from it (only
 * `new SocketModeReceiver()` reads `SocketModeClient`; only an installer would read oauth's
 * classes), it loads the real module and answers from that from then on. Nothing changes in what
 * runs, only when the package is loaded. If the package cannot be found where expected, or is
 * already loaded, it does nothing and Bolt loads everything as usual.
 *
 * Each returns whether the stand-in is in place.
 */
export const deferSocketModeClient = (): boolean => deferBoltDependency('@slack/socket-mode');
export const deferOAuth = (): boolean => deferBoltDependency('@slack/oauth');

function deferBoltDependency(name: string): boolean {
  const require = createRequire(import.meta.url);
  let file: string;
  let fromBolt: NodeJS.Require;
  try {
    fromBolt = createRequire(require.resolve('@slack/bolt'));
    file = fromBolt.resolve(name);
  } catch {
    return false;
  }
  if (require.cache[file]) return false;
  let real: Record<PropertyKey, unknown> | undefined;
  const load = (): Record<PropertyKey, unknown> => {
    if (!real) {
      // The stand-in leaves the cache so that require loads (and caches) the real module.
      if (require.cache[file]?.exports === standIn) delete require.cache[file];
      real = fromBolt(name) as Record<PropertyKey, unknown>;
    }
    return real;
  };
  const standIn: object = new Proxy(
    {},
    {
      get: (_t, key) => load()[key],
      has: (_t, key) => key in load(),
      ownKeys: () => Reflect.ownKeys(load()),
      getOwnPropertyDescriptor: (_t, key) => {
        const d = Reflect.getOwnPropertyDescriptor(load(), key);
        return d && { ...d, configurable: true };
      },
    },
  );
  require.cache[file] = { id: file, filename: file, loaded: true, exports: standIn, children: [], paths: [], path: file, require, isPreloading: false, parent: undefined, module: undefined } as unknown as NodeJS.Module;
  return true;
}
