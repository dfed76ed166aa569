/**
 * vitest globalSetup: the server serves the dashboard from dist/ui, so the
 * tests need it built. Builds once per run, and only when a file under ui/
 * is newer than the last build (a second run costs a directory walk).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

function newest(dir: string): number {
  let latest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    latest = Math.max(latest, stat.isDirectory() ? newest(path) : stat.mtimeMs);
  }
  return latest;
}

export async function buildDashboardIfStale(): Promise<void> {
  const built = join(root, 'dist', 'ui', 'index.html');
  if (existsSync(built) && statSync(built).mtimeMs >= newest(join(root, 'ui'))) return;
  const { build } = await import('vite');
  await build({ configFile: join(root, 'ui', 'vite.config.ts'), logLevel: 'warn' });
}

export default async function setup(): Promise<void> {
  await buildDashboardIfStale();
}
