/**
 * tasklease as its users run it: the compiled JavaScript in dist/ (which
 * `npm run bench` builds first), not the TypeScript sources through tsx's
 * loader. Only the types come from src/, so the bench still typechecks on a
 * fresh clone that has not been built.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type Library = typeof import('../../src/index.js');
type Stores = {
  postgres: typeof import('../../src/postgres.js');
  mysql: typeof import('../../src/mysql.js');
  sqlite: typeof import('../../src/sqlite.js');
};

const DIST = new URL('../../dist/src/', import.meta.url);

async function load<T>(file: string): Promise<T> {
  const url = new URL(file, DIST);
  if (!existsSync(fileURLToPath(url))) throw new Error(`${fileURLToPath(url)} is missing: build first (npx tsc -p tsconfig.build.json)`);
  return (await import(url.href)) as T;
}

export const library = (): Promise<Library> => load<Library>('index.js');

export const storeModule = <D extends keyof Stores>(dialect: D): Promise<Stores[D]> => load<Stores[D]>(`${dialect}.js`);
