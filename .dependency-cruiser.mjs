// Import rules for src/ (run by `npm run lint`; docs/architecture.md, "Module boundaries").
//
// A module is a folder under src/ (src/api/, src/web/, ...); each folder under src/channels/ is a
// module of its own, and so is each top-level file (src/app.ts). Modules are entered only through
// their index.ts. The shared kernels (shared/, db/, http/ and the files directly in channels/) have
// no index: each of their files is public. Tests and benches are not cruised: they may reach a
// module's internals.

// The module a file belongs to, captured as $1 (a top-level file such as src/app.ts captures itself).
const OWN_MODULE = '^src/((?:channels/)?[^/]+)';
const ANY_INDEX = '^src/(?:channels/)?[^/]+/index\\.ts$';
const KERNEL = ['^src/(?:shared|db|http)/', '^src/channels/[^/]+\\.ts$'];

// The layers of src/, lowest first. A module imports only modules of lower layers, never one of its
// own layer or above, so no arrow runs up and modules form no cycle. A new module gets a place here
// (lint fails until it has one); an import between two modules of one layer moves one of them up.
const LAYERS = [
  // Kernel: helpers and plumbing every module may use.
  ['shared/'],
  ['config.ts'],
  ['db/'],
  ['http/'],
  // Foundations: services the domains build on, knowing nothing of workspaces or purchases.
  ['audit/', 'catalog/', 'jobs/', 'psp/', 'signing/', 'storage/'],
  ['instances/', 'mail/'],
  ['idempotency/'],
  // Domains: the business, each module owning its tables.
  ['accounts/', 'webhooks/'],
  ['compliance/'],
  ['backup/', 'evidence-package/', 'workspace/'],
  ['api-keys/', 'oauth/', 'purchase/', 'reports/'],
  ['billing/', 'checkout/'],
  // Surfaces: what people, agents and API clients speak to.
  ['api/', 'channels/*.ts'],
  ['channels/acp/', 'channels/mpp/', 'channels/ucp/', 'mcp/', 'web/'],
  // Composition: wiring the modules into a process.
  ['app.ts', 'cli-commands.ts'],
  ['runtime.ts'],
  ['serve.ts'],
  ['cli.ts', 'main.ts'],
];

/** The files of a module of LAYERS: a folder, the files directly in channels/, or one file. */
function pathOf(module) {
  if (module === 'channels/*.ts') return '^src/channels/[^/]+\\.ts$';
  const escaped = module.replaceAll('.', '\\.');
  return module.endsWith('/') ? `^src/${escaped}` : `^src/${escaped}$`;
}

const ALL_MODULES = LAYERS.flat().map(pathOf);

const LAYER_RULES = LAYERS.flatMap((layer, index) =>
  layer.flatMap((module) => {
    const notBelow = LAYERS.slice(index)
      .flat()
      .filter((other) => other !== module);
    if (notBelow.length === 0) return [];
    return {
      name: `layer-${module.replace(/\/$/, '').replaceAll(/[^a-z]+/g, '-')}`,
      comment: `${module} imports only modules of the layers below its own (LAYERS).`,
      severity: 'error',
      from: { path: pathOf(module) },
      to: { path: notBelow.map(pathOf) },
    };
  }),
);

const PACKAGES = [
  'npm',
  'npm-bundled',
  'npm-dev',
  'npm-no-pkg',
  'npm-optional',
  'npm-peer',
  'npm-unknown',
  'core',
];

export default {
  forbidden: [
    {
      name: 'module-entered-through-index',
      comment: 'Import another module only through its index.ts (export what you need from there).',
      severity: 'error',
      from: { path: OWN_MODULE },
      to: { path: '^src/(?:channels/)?[^/]+/', pathNot: ['^src/$1/', ANY_INDEX, ...KERNEL] },
    },
    ...LAYER_RULES,
    {
      name: 'every-module-in-a-layer',
      comment: 'A module of src/ that is imported has its place in LAYERS.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: ALL_MODULES },
    },
    {
      name: 'app-and-cli-skip-the-rest-api',
      comment:
        'api/ is the REST surface only: the app and the CLI call the owning modules (api-keys/, db/cursor.ts, compliance/) themselves. mcp/ may use its route table.',
      severity: 'error',
      from: { path: ['^src/web/', '^src/cli-commands\\.ts$'] },
      to: { path: '^src/api/' },
    },
    {
      name: 'every-importer-in-a-layer',
      comment: 'A module of src/ that imports anything has its place in LAYERS.',
      severity: 'error',
      from: { path: '^src/', pathNot: ALL_MODULES },
      to: {},
    },
    {
      name: 'migrations-frozen-in-time',
      comment:
        'A migration runs the same forever: it imports packages and src/db/migrations/ only, no live code.',
      severity: 'error',
      from: { path: '^src/db/migrations/' },
      to: { dependencyTypesNot: PACKAGES, pathNot: '^src/db/migrations/' },
    },
    {
      name: 'src-stays-in-src',
      comment: 'The service imports nothing from test/, bench/ or outside the project (../shared).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: false, dependencyTypesNot: PACKAGES, pathNot: '^src/' },
    },
    {
      name: 'no-circular',
      comment: 'No import cycles in src/, type-only imports included.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    // TypeScript 7 has no JavaScript compiler API yet, so swc parses the sources; it reports type-only
    // imports too (as `type-only` dependencies), so they count like any other import.
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
      extensions: ['.ts', '.js', '.json'],
    },
  },
};
