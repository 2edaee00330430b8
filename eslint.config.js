// Type-aware lint: the rules that catch what reviews miss in async code
// (a promise nobody awaits, an async callback where a sync one is expected,
// a switch that forgets a new union member).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layers from './scripts/eslint-layers.js';
import poolConnect from './scripts/eslint-pool-connect.js';

const jobvisor = { rules: { ...poolConnect.rules, ...layers.rules } };

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      '.jobvisor/',
      'bench/peers/',
      'bench/results/',
      'test/fixtures/**/*.js',
      'test/fixtures/types/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // TaskPayloads is empty on purpose: apps fill it by module augmentation.
      '@typescript-eslint/no-empty-object-type': ['error', { allowWithName: '^TaskPayloads$' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // A pool lends clients only through src/db/borrow.ts, which keeps an error
    // listener on them while they are out (a restart otherwise kills the process).
    files: ['src/**/*.ts'],
    ignores: ['src/db/borrow.ts'],
    plugins: { jobvisor },
    rules: { 'jobvisor/no-pool-connect': 'error' },
  },
  {
    // Imports between the parts of src/ point down the floors; the table is in
    // scripts/eslint-layers.js and drawn in docs/ARCHITECTURE.md.
    files: ['src/**/*.ts'],
    plugins: { jobvisor },
    rules: { 'jobvisor/layers': 'error' },
  },
  {
    // One idea per file: a file that grows past 300 lines holds a second one.
    // The error text of an unknown throw comes from messageOf() (src/errors.ts),
    // which also handles what is not an Error.
    files: ['src/**/*.ts', 'bench/*.ts'],
    rules: {
      'max-lines': ['error', { max: 300 }],
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "MemberExpression[property.name='message'] > TSAsExpression.object[typeAnnotation.typeName.name='Error']",
          message: 'Use messageOf(err) from src/errors.ts.',
        },
      ],
    },
  },
  {
    // Tests read JSON bodies, query rows and CLI output typed \`any\` and assert on
    // them; the unsafe-* rules would only add casts there, not catch bugs.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
