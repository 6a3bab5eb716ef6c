// The house rules of the code, checked by `npm run lint` (docs/architecture.md explains the layers).
// A rule here is a promise the code keeps; an exception needs a line saying why.

/** src/ layers, bottom to top: each may import only from itself and the layers before it. */
const LAYERS = ['basics', 'settings', 'runtime', 'state', 'capabilities', 'agent', 'gateway', 'operations', 'app'];

const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer}`,
  comment: `src/${layer} imports only from the layers below it (${LAYERS.slice(0, i).join(', ') || 'none'}); pass anything from above in`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: `^src/(${LAYERS.slice(i + 1).join('|')})/` },
}));

/** Platform SDKs: only adapters/ may know them. */
const PLATFORM_SDKS = '^node_modules/(@slack/|discord\\.js|@discordjs/)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'a cycle means two modules cannot be understood, tested or moved apart',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'src-knows-no-adapter-or-tool',
      comment: 'src/ knows no platform and no particular tool; src/main.ts, the entry point, wires them in',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/main\\.ts$' },
      to: { path: '^(adapters|tools)/' },
    },
    {
      name: 'src-knows-no-platform-sdk',
      comment: 'the agent and everything else in src/ reach a platform only through the gateway ports',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: PLATFORM_SDKS },
    },
    {
      name: 'adapters-import-src-only',
      comment: 'an adapter knows its own platform and src/, never another platform, a tool or a test',
      severity: 'error',
      from: { path: '^adapters/([^/]+)/' },
      to: { path: '^(tools|test|bench)/|^adapters/', pathNot: '^adapters/$1/' },
    },
    {
      name: 'adapters-see-the-gateway-not-the-agent',
      comment: 'an adapter talks to the gateway (its ports and API), not to the agent loop or the operations',
      severity: 'error',
      from: { path: '^adapters/' },
      to: { path: '^src/(agent|operations|app)/' },
    },
    {
      name: 'tools-see-the-tool-api',
      comment:
        'a tool sees the tool API (src/capabilities/toolkit/tool-api.ts, and outside-gate.ts, whose rules a tool\'s effect ' +
        'uses), the basics, settings and the state and capability ' +
        'modules it wraps; never the toolkit behind the API, the runtime, the agent, the gateway, operations or the app',
      severity: 'error',
      from: { path: '^tools/' },
      to: {
        path: '^src/(capabilities/toolkit|runtime|agent|gateway|operations|app)/|^(adapters|test|bench)/',
        // exception (last pattern): read_channel_history shows messages in the line format of the
        // thread context the model already reads (one format, one place)
        pathNot: '^src/capabilities/toolkit/(tool-api|outside-gate)\\.ts$|^src/runtime/context/thread-context\\.ts$',
      },
    },
    ...layerRules,
    {
      name: 'no-orphans',
      comment: 'a module nothing imports is dead code or a missing entry point',
      severity: 'error',
      from: {
        orphan: true,
        pathNot: [
          '\\.d\\.m?ts$',
          '(^|/)\\.[^/]+\\.(c|m)?js$', // dot config files
          '^src/main\\.ts$',
          '^src/launch\\.mjs$',
          '^src/runtime/trace/trace-cli\\.ts$', // npm run trace
          '^src/operations/stats/stats-cli\\.ts$', // npm run stats
          '^bench/run\\.ts$', // npm run bench
        ],
      },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a type from a higher layer couples the code just as much.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    exclude: { path: '^(node_modules|dist)/' },
  },
};
