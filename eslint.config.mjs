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
    files: ['workflows/**/*.ts', 'test/fixtures/workflows/**/*.ts'],
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
  {
    // The provider simulators and the development tools are not production code: the processes
    // the image runs (api, worker) and everything they load never import them.
    files: ['api/**/*.ts', 'activities/**/*.ts', 'worker/**/*.ts', 'db/**/*.ts', 'providers/**/*.ts', 'config/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/simulators', '**/simulators/**', '**/dev', '**/dev/**'],
              message: 'Production code does not load the simulators or the development tools.',
            },
          ],
        },
      ],
    },
  },
  {
    // Small modules, one responsibility each: no source file over 400 lines.
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
    ],
    ignores: ['db/migrations/**'],
    rules: { 'max-lines': ['error', { max: 400 }] },
  },
  {
    files: ['domain/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: IO, message: 'Domain code is pure: no I/O module.' },
            { regex: '^(node:|pg$|knex$|koa$|@temporalio/)', message: 'Domain code is pure: no I/O module.' },
          ],
        },
      ],
    },
  },
);
