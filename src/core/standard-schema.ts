/**
 * The Standard Schema v1 interface (standardschema.dev), which zod, valibot,
 * arktype and others implement: the payload schema of a task definition may
 * come from any of them. Only the parts tasklease calls are declared.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

export type StandardResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<StandardIssue> };

export interface StandardIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : unknown;

export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  return typeof value === 'object' && value !== null && '~standard' in value && typeof (value as StandardSchemaV1)['~standard']?.validate === 'function';
}

/** Runs a schema; returns the output value or the issues, paths joined with dots. */
export async function runSchema<O>(
  schema: StandardSchemaV1<unknown, O>,
  value: unknown,
): Promise<{ ok: true; value: O } | { ok: false; issues: { message: string; path?: string }[] }> {
  const result = await schema['~standard'].validate(value);
  if (result.issues) {
    return {
      ok: false,
      issues: result.issues.map((issue) => ({
        message: issue.message,
        ...(issue.path && issue.path.length > 0 ? { path: issue.path.map((part) => String(typeof part === 'object' ? part.key : part)).join('.') } : {}),
      })),
    };
  }
  return { ok: true, value: result.value };
}
