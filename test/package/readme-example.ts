/** The README's example: the TypeScript block between `<!-- example:start -->` and `<!-- example:end -->`. */
export function extractReadmeExample(readme: string): string {
  const match = /<!-- example:start -->\s*```ts\n([\s\S]*?)```\s*<!-- example:end -->/.exec(readme);
  if (!match) throw new Error('README.md has no ```ts block between <!-- example:start --> and <!-- example:end -->');
  return match[1]!;
}
