/**
 * Who an operator action is recorded as (the task's action history, store
 * rules/actions.ts). The HTTP server names the caller's credential
 * (`token:<id>` with the token's name, `jwt:<subject>`), the CLI the OS user
 * (`cli:<user>`); a library caller names itself per call or once for the
 * client, else it is `library`.
 */
import { ValidationError } from '../core/errors.js';
import { checkNoNul } from '../core/text.js';
import { ACTION_TEXT_LIMIT } from '../store/rules/actions.js';
import type { Actor } from '../store/types.js';

export type { Actor } from '../store/types.js';

export const LIBRARY_ACTOR: Actor = Object.freeze({ id: 'library', name: null });

export interface ActorOption {
  /** Who is acting, for the task's action history; default: the client's `actor` (`library`). */
  actor?: Actor | string;
}

/** An actor checked at the edge (every store keeps 255 characters, none keeps NUL); a string is an id. */
export function checkActor(actor: Actor | string, where: string): Actor {
  const given = typeof actor === 'string' ? { id: actor, name: null } : actor;
  const text = (field: string, value: unknown, optional: boolean): void => {
    if (optional && (value === null || value === undefined)) return;
    if (typeof value !== 'string' || value.length === 0 || value.length > ACTION_TEXT_LIMIT)
      throw new ValidationError(`${where}: ${field} must be a string of 1 to ${ACTION_TEXT_LIMIT} characters`, field);
    checkNoNul(field, value, where);
  };
  if (given === null || typeof given !== 'object') throw new ValidationError(`${where}: actor must be a string or { id, name }`, 'actor');
  text('actor.id', given.id, false);
  text('actor.name', given.name, true);
  return { id: given.id, name: given.name ?? null };
}
