/**
 * Payloads and results encrypted at rest, per task type: a middleware
 * (middleware.ts) whose encode hook seals each value of the chosen types
 * with AES-256-GCM before it is written, and whose decode hook opens it
 * where it is read (the worker, before the execute middleware and the
 * schema; client.reveal). What the database holds is an envelope:
 *
 *   {"$encrypted":"aes-256-gcm","kid":"k2","iv":"…","tag":"…","data":"…"}
 *
 * `kid` names the key that sealed it, so keys rotate: give the new key as
 * `activeKeyId` and keep the old ones, which still open what they sealed.
 * The additional data binds the envelope to its task type and to what it is
 * (payload or result): an envelope copied onto another type does not open.
 * A value that is not an envelope is passed on as it is (tasks written
 * before encryption was turned on). A missing key or one that does not
 * open the envelope fails the attempt with PAYLOAD_KEY_MISSING or
 * PAYLOAD_DECRYPT_FAILED, never retried: the task ends FAILED with its
 * envelope intact, to be retried or replayed once the key is there.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { InvalidOptionsError, TaskFailure } from '../core/errors.js';
import type { Middleware, StoredValue } from './middleware.js';

export const ENCRYPTION_ALGORITHM = 'aes-256-gcm';

/** What the database holds for an encrypted value (base64 fields). */
export interface EncryptedValue {
  $encrypted: typeof ENCRYPTION_ALGORITHM;
  kid: string;
  iv: string;
  tag: string;
  data: string;
}

export interface PayloadEncryptionOptions {
  /** Keys by id (1–64 characters of [A-Za-z0-9_.-]): 32 bytes each, as a Buffer or base64 text. */
  keys: Readonly<Record<string, Buffer | Uint8Array | string>>;
  /** The key that seals new values; the others only open (rotation). Default: the last key listed. */
  activeKeyId?: string;
  /** The task types whose payloads and results are sealed. */
  types: readonly string[];
}

/** An encrypted value that cannot be opened: a key this process does not hold, or one that does not open it. */
export class PayloadKeyError extends TaskFailure {
  constructor(
    code: 'PAYLOAD_KEY_MISSING' | 'PAYLOAD_DECRYPT_FAILED',
    message: string,
    readonly keyId: string,
  ) {
    super(message, { code, retryable: false });
    this.name = 'PayloadKeyError';
  }
}

const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** Whether a stored value is an encrypted envelope (no key needed to tell). */
export function isEncrypted(value: unknown): value is EncryptedValue {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    v.$encrypted === ENCRYPTION_ALGORITHM && typeof v.kid === 'string' && typeof v.iv === 'string' && typeof v.tag === 'string' && typeof v.data === 'string'
  );
}

/** The additional data an envelope is bound to: what it is and its task type. */
export function encryptionContext(kind: StoredValue['kind'], taskType: string): string {
  return `tasklease/${kind}/${taskType}`;
}

/** The middleware: `payloadEncryption({ keys: { k1, k2 }, activeKeyId: 'k2', types: ['import-medical-record'] })`. */
export function payloadEncryption(options: PayloadEncryptionOptions): Middleware {
  const keys = keyring(options);
  const active = options.activeKeyId ?? [...keys.keys()].at(-1)!;
  if (!keys.has(active)) throw new InvalidOptionsError('payloadEncryption', 'activeKeyId', `names no key given: ${active}`);
  if (!Array.isArray(options.types) || options.types.some((t) => typeof t !== 'string' || t.length === 0)) {
    throw new InvalidOptionsError('payloadEncryption', 'types', 'must be a list of task types');
  }
  const types = new Set(options.types);
  return {
    name: 'payloadEncryption',
    encode: ({ kind, taskType, value }) => (types.has(taskType) ? seal(value, kind, taskType, active, keys.get(active)!) : value),
    decode: ({ kind, taskType, value }) => (isEncrypted(value) ? open(value, kind, taskType, keys) : value),
  };
}

/** A keyring from text such as an environment variable: `k1:<base64>,k2:<base64>` (the last one seals). */
export function parseKeys(text: string): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const colon = part.indexOf(':');
    if (colon <= 0) throw new InvalidOptionsError('payloadEncryption', 'keys', 'must read <id>:<base64 key>[,<id>:<base64 key>…]');
    keys[part.slice(0, colon)] = part.slice(colon + 1);
  }
  return keys;
}

function keyring(options: PayloadEncryptionOptions): Map<string, Buffer> {
  if (typeof options !== 'object' || options === null || typeof options.keys !== 'object' || options.keys === null) {
    throw new InvalidOptionsError('payloadEncryption', 'keys', 'must map key ids to 32-byte keys');
  }
  const keys = new Map<string, Buffer>();
  for (const [id, given] of Object.entries(options.keys)) {
    if (!KEY_ID.test(id))
      throw new InvalidOptionsError('payloadEncryption', 'keys', `key id ${JSON.stringify(id)} must be 1–64 characters of A–Z a–z 0–9 _ . -`);
    const key = typeof given === 'string' ? Buffer.from(given, 'base64') : Buffer.from(given);
    if (key.length !== 32) throw new InvalidOptionsError('payloadEncryption', 'keys', `key ${id} must be 32 bytes (AES-256), got ${key.length}`);
    keys.set(id, key);
  }
  if (keys.size === 0) throw new InvalidOptionsError('payloadEncryption', 'keys', 'must hold at least one key');
  return keys;
}

function seal(value: unknown, kind: StoredValue['kind'], taskType: string, kid: string, key: Buffer): EncryptedValue {
  const iv = randomBytes(12);
  const cipher = createCipheriv(ENCRYPTION_ALGORITHM, key, iv);
  cipher.setAAD(Buffer.from(encryptionContext(kind, taskType)));
  const data = Buffer.concat([cipher.update(JSON.stringify(value === undefined ? null : value), 'utf8'), cipher.final()]);
  return { $encrypted: ENCRYPTION_ALGORITHM, kid, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

function open(envelope: EncryptedValue, kind: StoredValue['kind'], taskType: string, keys: ReadonlyMap<string, Buffer>): unknown {
  const key = keys.get(envelope.kid);
  if (!key) {
    throw new PayloadKeyError(
      'PAYLOAD_KEY_MISSING',
      `the ${kind} of this ${taskType} task is sealed with key ${envelope.kid}, which this process does not hold`,
      envelope.kid,
    );
  }
  let text: string;
  try {
    const decipher = createDecipheriv(ENCRYPTION_ALGORITHM, key, Buffer.from(envelope.iv, 'base64'));
    decipher.setAAD(Buffer.from(encryptionContext(kind, taskType)));
    decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
    text = Buffer.concat([decipher.update(Buffer.from(envelope.data, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new PayloadKeyError(
      'PAYLOAD_DECRYPT_FAILED',
      `key ${envelope.kid} does not open the ${kind} of this ${taskType} task (a different key under that id, or the envelope was changed)`,
      envelope.kid,
    );
  }
  return JSON.parse(text) as unknown;
}
