// Import rules for src/ (run by `npm run lint`; docs/architecture.md, "Module boundaries").
//
// A module is a folder under src/ (src/api/, src/web/, ...); each folder under src/channels/ is a
// module of its own. Modules are entered only through their index.ts. The shared kernels (shared/,
// db/, http/ and the files directly in channels/) have no index: each of their files is public, and
// they import no module. Tests and benches are not cruised: they may reach a module's internals.

// The module a file belongs to, captured as $1 (a top-level file such as src/app.ts captures itself).
const OWN_MODULE = '^src/((?:channels/)?[^/]+)';
const ANY_INDEX = '^src/(?:channels/)?[^/]+/index\\.ts$';
const KERNEL = ['^src/(?:shared|db|http)/', '^src/channels/[^/]+\\.ts$'];
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
      from: { path: OWN_MODULE, pathNot: '^src/db/schema\\.ts$' },
      to: { path: '^src/(?:channels/)?[^/]+/', pathNot: ['^src/$1/', ANY_INDEX, ...KERNEL] },
    },
    {
      name: 'schema-reads-only-table-types',
      comment: "db/schema.ts combines the modules' *.table.ts types; nothing else of a module.",
      severity: 'error',
      from: { path: '^src/db/schema\\.ts$' },
      to: { path: '^src/(?:channels/)?[^/]+/', pathNot: [ANY_INDEX, ...KERNEL, '\\.table\\.ts$'] },
    },
    {
      name: 'app-and-cli-skip-the-rest-api',
      comment:
        'api/ is the REST surface only: the app and the CLI call the owning modules (api-keys/, db/cursor.ts, compliance/) themselves. mcp/ may use its route table.',
      severity: 'error',
      from: { path: ['^src/web/', '^src/cli\\.ts$'] },
      to: { path: '^src/api/' },
    },
    {
      name: 'kernel-imports-no-module',
      comment:
        'db/ and http/ import only the kernels and config.ts (migrations and schema.ts: see their rules).',
      severity: 'error',
      from: { path: '^src/(?:db|http)/', pathNot: ['^src/db/schema\\.ts$', '^src/db/migrations/'] },
      to: { path: '^src/', pathNot: ['^src/(?:shared|db|http)/', '^src/config\\.ts$'] },
    },
    {
      name: 'shared-is-a-leaf',
      comment: 'shared/ holds pure helpers every module may use; it depends on no other part of src/.',
      severity: 'error',
      from: { path: '^src/shared/' },
      to: { path: '^src/', pathNot: '^src/shared/' },
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
