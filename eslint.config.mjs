// Lint: typescript-eslint's recommended rules, plus the import rules that keep workflow code
// deterministic (no I/O module may enter the workflow bundle) and domain code free of I/O.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Modules that do I/O: workflows may import their types only; domain may not import them at all. */
const IO = [
  '**/activities',
  '**/activities/**',
  '**/db/**',
  '**/providers/**',
  '**/api/**',
  '**/config/**',
  '**/worker/**',
  '**/dev/**',
  '**/simulators/**',
];

const UP = 'No arrow runs back up: api → workflows (messages) → activities → db → domain (issue 31).';

/** The import rules of one layer: its own forbidden directions, and never the simulators or dev tools. */
function layer(files, patterns) {
  return {
    files,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/simulators', '**/simulators/**', '**/dev', '**/dev/**'],
              message: 'Production code does not load the simulators or the development tools.',
            },
            ...patterns,
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'test/replay/histories/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts', 'test/fixtures/workflows/**/*.ts', 'bench/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: IO,
              allowTypeImports: true,
              message: 'Workflow code imports I/O modules as types only (import type).',
            },
            {
              // Domain may hash with node:crypto, which the workflow sandbox does not have.
              group: ['**/domain/current-account/codes'],
              allowTypeImports: true,
              message: 'Workflow code imports the code digests as types only: they use node:crypto.',
            },
            {
              regex: '^(?!@temporalio/(workflow|common)$|\\.)',
              allowTypeImports: true,
              message:
                'Workflow code imports only @temporalio/workflow, @temporalio/common, workflow and domain modules.',
            },
          ],
        },
      ],
    },
  },
  // The provider simulators and the development tools are not production code: the processes
  // the image runs (api, worker) and everything they load never import them. And no arrow runs
  // back up the layers: api → workflows (messages) → activities → db → domain.
  layer(['api/**/*.ts'], [{ group: ['**/activities', '**/activities/**'], message: UP }]),
  layer(
    ['activities/**/*.ts'],
    [
      { group: ['**/api', '**/api/**', '**/worker', '**/worker/**'], message: UP },
      {
        regex: '(^|/)workflows/(?!([\\w-]+/messages|ids|search-attributes)$)',
        message: 'Activities import from workflows/ only the message types (and workflow ids).',
      },
    ],
  ),
  layer(
    ['db/**/*.ts'],
    [
      {
        group: [
          '**/activities',
          '**/activities/**',
          '**/workflows',
          '**/workflows/**',
          '**/providers/**',
          '**/api/**',
          '**/worker/**',
        ],
        message: UP,
      },
    ],
  ),
  layer(
    ['providers/**/*.ts'],
    [{ group: ['**/activities', '**/activities/**', '**/db/**', '**/api/**', '**/workflows/**'], message: UP }],
  ),
  layer(['worker/**/*.ts', 'config/**/*.ts'], []),
  {
    // Small modules, one responsibility each: no source file over 400 lines, no function over 150.
    files: [
      'api/**/*.ts',
      'activities/**/*.ts',
      'workflows/**/*.ts',
      'worker/**/*.ts',
      'db/**/*.ts',
      'domain/**/*.ts',
      'providers/**/*.ts',
      'simulators/**/*.ts',
      'config/**/*.ts',
      'dev/**/*.ts',
      'bench/**/*.ts',
    ],
    ignores: ['db/migrations/**'],
    rules: {
      'max-lines': ['error', { max: 400 }],
      // A factory of 400 lines is a module written as one function (../shared/STYLE.md).
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['domain/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: IO, message: 'Domain code is pure: no I/O module.' },
            {
              regex: '^(node:(?!crypto$)|pg$|knex$|koa$|@temporalio/)',
              message: 'Domain code is pure: no I/O module.',
            },
          ],
          paths: [
            {
              name: 'node:crypto',
              allowImportNames: ['createHash', 'createHmac'],
              message: 'Domain code may hash (a pure function); drawing random values belongs to activities.',
            },
          ],
        },
      ],
    },
  },
);
