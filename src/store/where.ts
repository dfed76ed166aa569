/**
 * Builds a parameterized WHERE clause for any dialect: values are always
 * bound, never interpolated. `placeholder(n)` renders the n-th (1-based)
 * parameter: '?' for SQLite and MySQL, '$n' for PostgreSQL.
 */
export class Where {
  private readonly parts: string[] = [];
  readonly values: unknown[] = [];

  constructor(private readonly placeholder: (index: number) => string = () => '?') {}

  /** Adds a condition; each '?' in `sql` takes the next value. */
  add(sql: string, ...values: unknown[]): this {
    let text = '';
    let rest = sql;
    for (const value of values) {
      const at = rest.indexOf('?');
      if (at < 0) throw new Error(`Where.add: more values than placeholders in ${sql}`);
      this.values.push(value);
      text += rest.slice(0, at) + this.placeholder(this.values.length);
      rest = rest.slice(at + 1);
    }
    this.parts.push(text + rest);
    return this;
  }

  /** Adds `column IN (…)` for a non-empty list. */
  in(column: string, values: readonly unknown[]): this {
    return this.add(`${column} IN (${values.map(() => '?').join(', ')})`, ...values);
  }

  /** Adds a condition only when `value` is neither null nor undefined. */
  optional(sql: string, value: unknown): this {
    return value === null || value === undefined ? this : this.add(sql, value);
  }

  /** '' or 'WHERE a AND b'. */
  toString(): string {
    return this.parts.length === 0 ? '' : `WHERE ${this.parts.join(' AND ')}`;
  }
}
