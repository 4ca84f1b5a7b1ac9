import type { CodegenConfig } from '@graphql-codegen/cli';

// Operation types from the server's schema: every graphql(`...`) document
// in src/ gets a TypedDocumentNode in src/gql/. A document that no longer
// matches the schema fails here, and a type that changed fails tsc.
const config: CodegenConfig = {
  schema: '../schema.graphqls',
  documents: ['src/**/*.{ts,tsx}', '!src/gql/**'],
  ignoreNoDocuments: true,
  generates: {
    'src/gql/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        enumsAsTypes: true,
        useTypeImports: true,
        strictScalars: true,
        scalars: { Time: 'string', JSON: 'unknown' },
        avoidOptionals: { field: true, inputValue: false, object: false, defaultValue: false },
      },
    },
  },
  hooks: {},
};

export default config;
