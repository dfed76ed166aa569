import tseslint from 'typescript-eslint';

export default tseslint.config({ ignores: ['dist/', 'node_modules/', '.tmp/', '.tasklease-demo/'] }, ...tseslint.configs.recommended, {
  rules: {
    '@typescript-eslint/no-non-null-assertion': 'off',
    '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    'no-control-regex': 'off',
  },
});
