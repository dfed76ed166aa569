import { ValidationError } from './errors.js';
import { checkNoNul } from './text.js';

/**
 * Who is asking. An owner sees and acts on only its own tasks; global is for
 * operators. A task outside the scope answers exactly like a missing one.
 */
export type Scope = { readonly kind: 'global' } | { readonly kind: 'owner'; readonly owner: string };

export const Scope = {
  global(): Scope {
    return GLOBAL;
  },
  owner(owner: string): Scope {
    if (typeof owner !== 'string' || owner.length === 0) throw new ValidationError('Scope.owner needs a non-empty owner', 'owner');
    checkNoNul('owner', owner, 'Scope.owner');
    return { kind: 'owner', owner };
  },
};

const GLOBAL: Scope = Object.freeze({ kind: 'global' as const });

/** The owner a scope restricts to, or null for global. */
export function scopeOwner(scope: Scope): string | null {
  return scope.kind === 'owner' ? scope.owner : null;
}
