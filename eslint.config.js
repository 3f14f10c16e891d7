import { readdirSync } from 'node:fs';
import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * The controller's layers, lowest first: each imports only the layers below it (docs/architecture/controller.md,
 * "Which folder may import which"). A layer is a folder, or files of the controller's root. One rule, made from
 * this list, covers every file of the controller; a folder or root file missing from it fails the lint.
 */
const CONTROLLER_LAYERS = [
  // Small parts of the process every layer may use.
  [
    'auto-rotate.ts',
    'clock.ts',
    'commands.ts',
    'git-safety.ts',
    'private-runtime-dir.ts',
    'process-tether.ts',
    'run-stats.ts',
    'simple-git.ts',
    'status-counts.ts',
  ],
  // The domains: the work schema and store, then each domain above what it uses.
  'beads',
  'config-schema',
  'hosts',
  'services',
  'providers',
  'packs',
  'worktrees',
  'reviews',
  'usage',
  'agent-catalog',
  'sessions',
  'waits',
  'formulas',
  'molecules',
  'orders',
  'webhooks',
  'extmsg',
  'config',
  'agents',
  'doctor',
  'rigs',
  // The parts of a running city as the root built them (types), then the routes and the server given it.
  'city-runtime.ts',
  'api',
  'generated',
  'http',
  // The composition root, and the process that runs it.
  'assemble-city.ts',
  'main.ts',
];

/** The domain folders: the layers between the process's small parts and city-runtime.ts. */
const CONTROLLER_DOMAINS = CONTROLLER_LAYERS.slice(1, CONTROLLER_LAYERS.indexOf('city-runtime.ts'));

const LAYER_OF = new Map(CONTROLLER_LAYERS.flatMap((layer, rank) => [layer].flat().map((name) => [name, rank])));
for (const entry of readdirSync(new URL('./controller/', import.meta.url), { withFileTypes: true })) {
  const name = entry.name;
  if ((entry.isDirectory() || name.endsWith('.ts')) && !LAYER_OF.has(name)) {
    throw new Error(`eslint.config.js: controller/${name} is in no layer of CONTROLLER_LAYERS`);
  }
}

/** The import patterns a file `depth` folders below controller/ may not use: anything of a layer above `rank`'s. */
function layerPatterns(rank, depth) {
  const above = CONTROLLER_LAYERS.slice(rank + 1).flat();
  const folders = above.filter((name) => !name.endsWith('.ts'));
  const files = above.filter((name) => name.endsWith('.ts')).map((name) => name.replace(/\.ts$/, ''));
  if (!above.length) return [];
  const up = depth === 0 ? '\\./' : `(?:\\.\\./){${depth}}`;
  const alternatives = [
    ...(folders.length ? [`(?:${folders.join('|')})/`] : []),
    ...(files.length ? [`(?:${files.join('|')})\\.js$`] : []),
  ];
  const name = [CONTROLLER_LAYERS[rank]].flat().join(', ');
  return [
    {
      regex: `^${up}(?:${alternatives.join('|')})`,
      message: `${name} may import only the controller's layers below it (CONTROLLER_LAYERS; docs/architecture/controller.md)`,
    },
  ];
}

/** What a layer forbids beyond the order. */
const LAYER_EXTRAS = {
  // The parts come through the root (CityRuntime); what goes on the wire, through the domains' views.
  http: [
    {
      regex: `^\\.\\./(${CONTROLLER_DOMAINS.join('|')})/(?!(agent-views|transcript|config-warnings)\\.js$)`,
      allowTypeImports: true,
      message: 'http/ reaches a domain through CityRuntime (city-runtime.ts), or its wire views',
    },
  ],
};

/** One config object per layer and depth: a file's imports, checked against the layers above its own. */
const CONTROLLER_LAYER_RULES = CONTROLLER_LAYERS.flatMap((layer, rank) =>
  [layer].flat().flatMap((name) => {
    const depths = name.endsWith('.ts') ? [0] : [1, 2, 3, 4];
    return depths.map((depth) => ({
      files: [depth === 0 ? `controller/${name}` : `controller/${name}/${'*/'.repeat(depth - 1)}*.ts`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          { patterns: [...layerPatterns(rank, depth), ...(depth === 1 ? (LAYER_EXTRAS[name] ?? []) : [])] },
        ],
      },
    }));
  }),
);

export default defineConfig(
  { ignores: ['dist/**', '**/generated/**', 'node_modules/**', '.bench-out/**', 'test/fixtures/reference-cities/**'] },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Process boundaries: supervisor/, controller/ and cli/ share code only through shared/.
      'no-restricted-imports': 'off',
    },
  },
  {
    files: ['supervisor/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+(controller|cli)/', message: 'processes share code only through shared/' }] },
      ],
    },
  },
  {
    files: ['controller/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+(supervisor|cli)/', message: 'processes share code only through shared/' }] },
      ],
    },
  },
  // Inside the controller, each layer imports only those below it (CONTROLLER_LAYERS).
  ...CONTROLLER_LAYER_RULES,
  {
    files: ['cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(\\.\\./)+(supervisor|controller)/', message: 'processes share code only through shared/' },
          ],
        },
      ],
    },
  },
  {
    files: ['shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(\\.\\./)+(supervisor|controller|cli)/', message: 'processes share code only through shared/' },
          ],
        },
      ],
    },
  },
  {
    // The dashboard runs in a browser: it reaches the control plane over HTTP like any client, and shares only the
    // generated API types (shared/generated/) with the rest; nothing of a process, nor the rest of shared/, which is Node.
    files: ['ui/**/*.ts', 'ui/**/*.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(supervisor|controller|cli|test|bench|tools|examples)/',
              message: 'the dashboard imports only shared/generated/ (the API types) and its own files',
            },
            {
              regex: '^(\\.\\./)+shared/(?!generated/)',
              message: 'the dashboard imports only shared/generated/ (the API types): the rest of shared/ is Node',
            },
            { regex: '^node:', message: 'the dashboard runs in a browser' },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', '**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        require: 'readonly',
        module: 'writable',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        AbortSignal: 'readonly',
      },
    },
  },
  { files: ['**/*.cjs'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
);
