/**
 * How a claim shares limited room, written once: the fair share of a type's
 * limit among the live workers of the type (F8), the per-owner room, and the
 * round-robin order across owners. SQLite and MySQL decide in code with
 * these functions; PostgreSQL's claim function renders the same rules as SQL
 * from the text below.
 */
import { claimOrder } from '../claim-order.js';
import type { Row } from '../rows.js';
import type { RateBudget } from './rates.js';

export interface TypeShareInput {
  /** The type's limit (policy or default). */
  cap: number;
  /** Leased tasks of the type, cluster-wide. */
  leased: number;
  /** Of those, leased by the claiming worker. */
  mine: number;
  /** Live workers registered for the type (the claimer among them); 0 when unknown. */
  live: number;
}

/**
 * How many tasks of a type one claim may take. Everyone may fill its share
 * of the limit, ceil(cap / live) minus what it holds; beyond that only
 * floor(free / live). "Free slots / live workers, rounded up" alone is not
 * enough: a worker that finishes a task frees one slot and claims it back in
 * the same round trip (claim-along), so the other worker, polling, never
 * finds room — that is the 200/0 split. With floor a worker over its share
 * leaves a single free slot to the others, and at most live − 1 slots stay
 * idle while the others do not claim.
 */
export function typeShare({ cap, leased, mine, live }: TypeShareInput): number {
  const free = cap - leased;
  if (free <= 0) return 0;
  if (live <= 1) return free;
  return Math.min(free, Math.max(Math.ceil(cap / live) - mine, Math.floor(free / live)));
}

/** typeShare as an SQL expression over the named operands (integers; `live` at least 1). */
export function typeShareSql(cap: string, leased: string, mine: string, live: string): string {
  const free = `(${cap} - ${leased})`;
  return `CASE WHEN ${live} <= 1 THEN ${free} ELSE LEAST(${free}, GREATEST(CEIL(${cap}::numeric / ${live})::integer - ${mine}, ${free} / ${live})) END`;
}

/** What limits an owner: its OWNER:<owner> policy, else the default owner limit; null = no limit. */
export interface OwnerLimit {
  maxConcurrency: number | null;
  enabled: boolean;
}

/** Room left to an owner: Infinity when unlimited (and for tasks without an owner), 0 when disabled. */
export function ownerRoom(limit: OwnerLimit | undefined, defaultCap: number | null, leased: number): number {
  if (limit && !limit.enabled) return 0;
  const cap = limit?.maxConcurrency ?? defaultCap;
  return cap === null ? Infinity : Math.max(0, cap - leased);
}

/**
 * Round robin across owners: every owner's first task, then every owner's
 * second, … (claim order within a round), taking a row only while its type,
 * its owner, the claim and (with `rates`) every rate scope of the row have room. Tasks without an owner form one group.
 * Candidates must hold each owner's rows of a type in claim order.
 */
export function pickRoundRobin(
  candidates: readonly Row[],
  typeRoom: Map<string, number>,
  ownerRoomOf: (owner: string) => number,
  room: number,
  rates?: RateBudget,
): Row[] {
  const rank = new Map<string, number>();
  const ranked = [...candidates].sort(claimOrder).map((row) => {
    const group = ownerGroup(row.owner);
    const n = (rank.get(group) ?? 0) + 1;
    rank.set(group, n);
    return { row, n, group };
  });
  ranked.sort((a, b) => a.n - b.n || claimOrder(a.row, b.row));
  const takenByType = new Map<string, number>();
  const takenByOwner = new Map<string, number>();
  const chosen: Row[] = [];
  for (const { row, group } of ranked) {
    if (chosen.length >= room) break;
    const type = String(row.task_type);
    const byType = takenByType.get(type) ?? 0;
    const byOwner = takenByOwner.get(group) ?? 0;
    if (byType >= (typeRoom.get(type) ?? 0)) continue;
    if (row.owner !== null && row.owner !== undefined && byOwner >= ownerRoomOf(String(row.owner))) continue;
    if (rates && !rates.admits(row)) continue;
    rates?.take(row);
    takenByType.set(type, byType + 1);
    takenByOwner.set(group, byOwner + 1);
    chosen.push(row);
  }
  return chosen;
}

function ownerGroup(owner: unknown): string {
  // A prefix no owner value collides with: owned groups are "o:<owner>", the unowned group is "-".
  return owner === null || owner === undefined ? '-' : `o:${String(owner)}`;
}

/** A policy row as the claims of SQLite and MySQL read it. */
export interface ClaimPolicy {
  maxConcurrency: number | null;
  enabled: boolean;
}

/** Leased tasks of a type, and how many of them the claiming worker holds. */
export interface TypeLeases {
  n: number;
  mine: number;
}

/** Live workers per type, from the registry's task_types (JSON arrays). */
export function liveByType(taskTypesJson: readonly unknown[]): Map<string, number> {
  const live = new Map<string, number>();
  for (const json of taskTypesJson) {
    for (const type of new Set(JSON.parse(String(json)) as string[])) live.set(type, (live.get(type) ?? 0) + 1);
  }
  return live;
}

/** Each enabled type's room for this claim (its fair share when liveWithinMs is given); types without room are left out. */
export function typeRooms(
  taskTypes: readonly string[],
  params: { typeConcurrency: number; liveWithinMs?: number },
  policyOf: (taskType: string) => ClaimPolicy | undefined,
  leased: ReadonlyMap<string, TypeLeases>,
  live: ReadonlyMap<string, number>,
): Map<string, number> {
  const rooms = new Map<string, number>();
  for (const taskType of new Set(taskTypes)) {
    const policy = policyOf(taskType);
    if (policy && !policy.enabled) continue;
    const counts = leased.get(taskType) ?? { n: 0, mine: 0 };
    const cap = policy?.maxConcurrency ?? params.typeConcurrency;
    const room = typeShare({ cap, leased: counts.n, mine: counts.mine, live: params.liveWithinMs === undefined ? 0 : (live.get(taskType) ?? 0) });
    if (room > 0) rooms.set(taskType, room);
  }
  return rooms;
}

/** Owners are in play (the claim takes the fair path) when the worker asks for it, gives a default owner limit, or an OWNER: policy exists. */
export function ownersInPlay(params: { ownerConcurrency?: number | null; fairOwners?: boolean }, ownerPolicyExists: boolean): boolean {
  return params.fairOwners === true || (params.ownerConcurrency ?? null) !== null || ownerPolicyExists;
}
