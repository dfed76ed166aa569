/**
 * vitest globalSetup: builds the package before any test runs, and only what
 * is stale — dist/src (the packed-package test installs it) when a file under
 * src/ is newer than the last build, dist/ui (the server serves the dashboard
 * from it) when a file under ui/ is. A second run costs two directory walks.
 *
 * Nothing builds during the run: `npm pack` in test/package runs with
 * --ignore-scripts, because its prepack (`npm run build`) empties dist/ while
 * other files' servers read dist/ui (a CI run's dashboard answered 404 so).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

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

const stale = (built: string, sources: string[]): boolean => !existsSync(built) || sources.some((dir) => statSync(built).mtimeMs < newest(join(root, dir)));

export async function buildDashboardIfStale(): Promise<void> {
  if (!stale(join(root, 'dist', 'ui', 'index.html'), ['ui'])) return;
  const { build } = await import('vite');
  await build({ configFile: join(root, 'ui', 'vite.config.ts'), logLevel: 'warn' });
}

/** dist/src as `npm run build` makes it (emptied first: a moved module leaves no old file behind). */
async function buildLibraryIfStale(): Promise<void> {
  if (!stale(join(root, 'dist', 'src', 'index.js'), ['src'])) return;
  rmSync(join(root, 'dist', 'src'), { recursive: true, force: true });
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, maxBuffer: 32 * 1024 * 1024 }).catch(
    (error: { stdout?: string; message: string }) => {
      throw new Error(`building dist/src failed:\n${error.stdout ?? error.message}`);
    },
  );
}

export default async function setup(): Promise<void> {
  await Promise.all([buildLibraryIfStale(), buildDashboardIfStale()]);
}
