import { randomFillSync } from 'node:crypto';

let lastMs = 0;
let sequence = 0;

// Random bytes are drawn from the CSPRNG in blocks: one call per id cost
// about 5 µs, as much as the rest of a bulk submit's per-task work.
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

function random(count: number): number {
  if (poolOffset + count > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += count;
  return at;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits, so ids sort
 * by creation time. Within one millisecond a 12-bit counter in rand_a keeps
 * ids from one process strictly increasing.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    sequence = pool.readUInt16BE(random(2)) & 0x3ff; // leave headroom before overflow
  } else {
    sequence += 1;
    if (sequence > 0xfff) {
      lastMs += 1; // borrow the next millisecond rather than repeat
      sequence = 0;
    }
  }
  const ms = lastMs;
  const r = random(8);
  const high = Math.floor(ms / 2 ** 32);
  return (
    HEX[(high >>> 8) & 0xff]! +
    HEX[high & 0xff]! +
    HEX[(ms >>> 24) & 0xff]! +
    HEX[(ms >>> 16) & 0xff]! +
    '-' +
    HEX[(ms >>> 8) & 0xff]! +
    HEX[ms & 0xff]! +
    '-' +
    HEX[0x70 | ((sequence >>> 8) & 0x0f)]! +
    HEX[sequence & 0xff]! +
    '-' +
    HEX[0x80 | (pool[r]! & 0x3f)]! +
    HEX[pool[r + 1]!]! +
    '-' +
    HEX[pool[r + 2]!]! +
    HEX[pool[r + 3]!]! +
    HEX[pool[r + 4]!]! +
    HEX[pool[r + 5]!]! +
    HEX[pool[r + 6]!]! +
    HEX[pool[r + 7]!]!
  );
}
