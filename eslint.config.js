import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** The controller's domain folders: one per family of the city (see docs/architecture/controller.md). */
const CONTROLLER_DOMAINS = [
  'agents',
  'beads',
  'config',
  'doctor',
  'extmsg',
  'formulas',
  'molecules',
  'orders',
  'packs',
  'providers',
  'rigs',
  'services',
  'sessions',
  'usage',
  'worktrees',
];

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
  // Inside the controller, folders depend one way: http/ (the server: app, proxies, streams) → api/ (routes) →
  // the domains (one folder each) → shared/. The composition root (assemble-city.ts) builds the parts and
  // main.ts runs them; nothing imports either but main.ts. Domains take narrow hosts, never the whole
  // CityRuntime, and never reach up into api/ or http/.
  {
    files: [`controller/{${CONTROLLER_DOMAINS.join(',')}}/**/*.ts`],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(api|http|generated)/',
              message: 'a domain never imports the HTTP layers (api/, http/)',
            },
            {
              regex: '^(\\.\\./)+(city-runtime|assemble-city|main)\\.js$',
              message: 'a domain takes a narrow host (an interface of what it needs), never the whole CityRuntime',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['controller/api/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./http/', message: 'routes do not import the server that mounts them (http/)' },
            { regex: '^\\.\\./(assemble-city|main)\\.js$', message: 'routes get the city through api/ioc.ts' },
          ],
        },
      ],
    },
  },
  {
    files: ['controller/http/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // The parts come through the root (CityRuntime); what goes on the wire, through the domains' views.
              regex: `^\\.\\./(${CONTROLLER_DOMAINS.join('|')})/(?!(agent-views|transcript|config-warnings)\\.js$)`,
              allowTypeImports: true,
              message: 'http/ reaches a domain through CityRuntime (city-runtime.ts), or its wire views',
            },
            { regex: '^\\.\\./(assemble-city|main)\\.js$', message: 'http/ is given the city; it does not build it' },
          ],
        },
      ],
    },
  },
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
