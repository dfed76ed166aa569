/**
 * How a worker child process opens its store: the parent passes one of these
 * as JSON (env TL_CHILD), so the same child serves every dialect.
 * `label` names the process's connections (PostgreSQL: application_name
 * prefix) so the parent can cut exactly this process's connections.
 */
import type { Store } from '../../src/store/types.js';

export type ChildStoreConfig =
  | { dialect: 'postgres'; url: string; schema: string }
  | { dialect: 'mysql'; uri: string };

export function childApplicationName(label: string): string {
  return `tlw-${label}`;
}

export async function openChildStore(config: ChildStoreConfig, label: string): Promise<Store> {
  switch (config.dialect) {
    case 'postgres': {
      const { PostgresStore } = await import('../../src/store/postgres/store.js');
      return new PostgresStore({ connectionString: config.url, schema: config.schema, poolSize: 4, applicationName: childApplicationName(label) });
    }
    case 'mysql': {
      const { MysqlStore } = await import('../../src/store/mysql/store.js');
      return new MysqlStore({ uri: config.uri, poolSize: 4 });
    }
  }
}
