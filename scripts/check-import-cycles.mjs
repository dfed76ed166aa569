#!/usr/bin/env node
/**
 * Fails when the modules under src/ import each other in a circle (type-only
 * imports included: a circle of types is still two modules that cannot be
 * understood, or moved, one without the other). Relative imports only; the
 * rest are packages. Prints each circle once, as a path of files.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'src');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

function target(from, specifier) {
  const base = resolve(dirname(from), specifier).replace(/\.(m?js)$/, '');
  for (const candidate of [`${base}.ts`, `${base}.tsx`, `${base}.mts`, join(base, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}

const graph = new Map(files(root).map((file) => [file, [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => target(file, m[1])).filter(Boolean)]));
const state = new Map();
const stack = [];
const cycles = new Set();

function visit(file) {
  state.set(file, 'open');
  stack.push(file);
  for (const next of graph.get(file) ?? []) {
    if (state.get(next) === 'open') {
      const circle = stack.slice(stack.indexOf(next)).map((f) => relative(process.cwd(), f));
      const start = circle.indexOf([...circle].sort()[0]);
      cycles.add([...circle.slice(start), ...circle.slice(0, start)].join(' → '));
    } else if (!state.has(next)) visit(next);
  }
  stack.pop();
  state.set(file, 'done');
}

for (const file of graph.keys()) if (!state.has(file)) visit(file);
if (cycles.size > 0) {
  console.error(`import circles under ${relative(process.cwd(), root) || '.'}:`);
  for (const cycle of cycles) console.error(`  ${cycle}`);
  process.exit(1);
}
console.log(`no import circles among ${graph.size} modules under ${relative(process.cwd(), root) || '.'}`);
