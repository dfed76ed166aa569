/** Who an HTTP caller is recorded as on a task's action history (auth.ts actorOf): every kind of credential. */
import { describe, expect, it } from 'vitest';
import { actorOf, type Principal } from '../../src/server/auth.js';

const principal = (overrides: Partial<Principal>): Principal => ({
  role: 'operator',
  owner: null,
  name: 'ops-laptop',
  via: 'token',
  tokenId: 'tok-1',
  expiresAt: null,
  identity: 'token:tok-1',
  ...overrides,
});

describe('actorOf', () => {
  it('a token (or its dashboard session) is its stable id, named by its name', () => {
    expect(actorOf(principal({}))).toEqual({ id: 'token:tok-1', name: 'token:ops-laptop' });
    expect(actorOf(principal({ via: 'session', tokenId: 'session-row' }))).toEqual({ id: 'token:tok-1', name: 'token:ops-laptop' });
  });

  it('a JWT is its subject, with no other name; a subject the stores cannot keep is cut and cleaned, never refused', () => {
    expect(actorOf(principal({ via: 'jwt', tokenId: null, name: 'ana', identity: 'jwt:ana' }))).toEqual({ id: 'jwt:ana', name: null });
    const long = actorOf(principal({ via: 'jwt', tokenId: null, identity: `jwt:${'s'.repeat(400)}\u0000` }));
    expect(long.id).toHaveLength(255);
    expect(long.id).not.toContain('\u0000');
  });
});
