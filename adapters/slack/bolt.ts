/**
 * The parts of Bolt this adapter uses at run time, each required from its own file instead of
 * from `@slack/bolt`'s index. The index requires every receiver Bolt has, among them
 * ExpressReceiver with express and body-parser (~120 files), which we never use (HTTP mode has
 * our own receiver, events-receiver.ts), and it re-exports @slack/oauth's classes. Imported from
 * an ES module, Node also builds the index's namespace by reading every export, so nothing it
 * names can stay unloaded. The files required here are the ones the index itself requires
 * (`@slack/bolt` has no `exports` map, so they are public paths); the classes are the same
 * objects the index hands out. Types still come from `@slack/bolt`.
 *
 * Requiring App.js still requires @slack/oauth (its HTTP and Socket Mode receivers do, for the
 * installer we never configure) and @slack/socket-mode: defer-socket-mode.ts keeps both as
 * stand-ins until first used when it runs before this module is loaded (src/main.ts does).
 */
import { createRequire } from 'node:module';
import type * as Bolt from '@slack/bolt';

// Resolved from Bolt's own folder, so the packages are the copies Bolt itself loads.
const fromBolt = createRequire(createRequire(import.meta.url).resolve('@slack/bolt'));

export const App: typeof Bolt.App = (fromBolt('./App.js') as { default: typeof Bolt.App }).default;
export const SocketModeReceiver: typeof Bolt.SocketModeReceiver = (fromBolt('./receivers/SocketModeReceiver.js') as { default: typeof Bolt.SocketModeReceiver }).default;
export const HTTPModuleFunctions: typeof Bolt.HTTPModuleFunctions = fromBolt('./receivers/HTTPModuleFunctions.js') as typeof Bolt.HTTPModuleFunctions;
export const HTTPResponseAck: typeof Bolt.HTTPResponseAck = (fromBolt('./receivers/HTTPResponseAck.js') as { HTTPResponseAck: typeof Bolt.HTTPResponseAck }).HTTPResponseAck;
export const LogLevel: typeof Bolt.LogLevel = (fromBolt('@slack/logger') as { LogLevel: typeof Bolt.LogLevel }).LogLevel;
export type LogLevel = Bolt.LogLevel;
const webApi = fromBolt('@slack/web-api') as typeof Bolt.webApi;
export const { WebClient, ErrorCode } = webApi;
